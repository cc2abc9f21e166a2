"""Shared roofline core: bound results, fast evaluation of graph costs, pipe times.

Contract: ``EinsumGraph -> CostArrays`` at a size binding (all counts of the graph
compiled once into one numpy function, cached on the graph), and the `Bound`
result type every model returns. A model only decides which bytes count and how
kernels combine; ``time >= max(compute time, memory time)`` lives here.

Note [Overlapping units]: compute time is reported per pipe (unit and precision),
and the bound combines pipes with a MAX, not a sum: tensor cores and vector units
run concurrently, so only the busiest pipe is a proven lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, overload

import numpy as np

from solar.bounds.precision import PrecisionPolicy, ResolvedPipe, resolve_pipe
from solar.einsum import Count, DeferredCount, EinsumGraph, WorkClass
from solar.hw import HardwareSpec
from solar.symbolic import SymExpr, compile_exprs

__all__ = [
    "CacheState",
    "warm_split",
    "Bottleneck",
    "Bound",
    "BoundModel",
    "CostArrays",
    "KernelBound",
    "KernelBreakdown",
    "PipeTable",
    "SymbolicCosts",
    "evaluate_costs",
    "pipe_table",
    "symbolic_costs",
]

BoundModel: TypeAlias = Literal["unfused", "fused", "cache-aware"]
CacheState: TypeAlias = Literal["warm", "cold"]
"""Cache state at the start of the timed region (Note [Warm cache]).

``warm`` (the default) allows up to the L2 capacity of the program's data to be
on chip when it starts, as in a benchmark loop that repeats the program: the safe
assumption for comparing with measured times. ``cold`` charges every first touch
to DRAM (a program run once, or a harness that flushes L2 between trials)."""
Bottleneck: TypeAlias = Literal["compute", "memory"]


@dataclass(frozen=True, slots=True)
class KernelBound:
    """One kernel's share of an unfused bound.

    Attributes:
        name: kernel name.
        flops: FLOPs.
        dram_bytes: bytes charged at DRAM bandwidth.
        l2_bytes: bytes charged at L2 bandwidth.
        unit: the kernel's work class.
        precision: label of its busiest pipe, e.g. ``tensor:tf32``.
        compute_time_s: busiest pipe's time.
        memory_time_s: max of DRAM and L2 time.
        time_s: ``max(compute_time_s, memory_time_s)``.
        bottleneck: which term is larger.
    """

    name: str
    flops: float
    dram_bytes: float
    l2_bytes: float
    unit: WorkClass
    precision: str
    compute_time_s: float
    memory_time_s: float
    time_s: float
    bottleneck: Bottleneck


class KernelBreakdown(Sequence[KernelBound]):
    """Per-kernel bounds, built on access from columns (cheap to create per binding).

    Args:
        names: kernel names.
        units: work classes.
        columns: flops, DRAM bytes, L2 bytes, compute and memory time per kernel.
        precisions: busiest pipe label per kernel.
    """

    __slots__ = ("_cols", "_names", "_precisions", "_units")

    def __init__(self, names: Sequence[str], units: Sequence[WorkClass],
                 columns: Sequence[Sequence[float]], precisions: Sequence[str]) -> None:
        self._names = names
        self._units = units
        self._cols = columns
        self._precisions = precisions

    def __len__(self) -> int:
        return len(self._names)

    @overload
    def __getitem__(self, i: int) -> KernelBound: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[KernelBound]: ...

    def __getitem__(self, i: int | slice) -> KernelBound | Sequence[KernelBound]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(len(self))[i])
        flops, dram, l2, compute, memory = (c[i] for c in self._cols)
        return KernelBound(
            name=self._names[i], flops=flops, dram_bytes=dram, l2_bytes=l2,
            unit=self._units[i], precision=self._precisions[i], compute_time_s=compute,
            memory_time_s=memory, time_s=max(compute, memory),
            bottleneck="compute" if compute >= memory else "memory",
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"KernelBreakdown({list(self)!r})"


@dataclass(frozen=True, slots=True)
class Bound:
    """A speed-of-light lower bound on the run time of a program on one device.

    Attributes:
        model: the bound model.
        device: the hardware spec's name.
        precision_policy: the policy deciding each kernel's pipe.
        sizes: the full size binding.
        time_s: the bound.
        compute_time_s: compute term (see each model).
        compute_time_s_by_unit: time per pipe label (``tensor:tf32``...).
        memory_time_s: memory term.
        dram_bytes: bytes charged at DRAM bandwidth.
        l2_bytes: bytes charged at L2 bandwidth (unfused only).
        flops: all FLOPs.
        flops_by_unit: FLOPs per pipe label.
        arithmetic_intensity: FLOPs per DRAM byte (inf with no DRAM traffic).
        bottleneck: ``compute`` or ``memory``.
        kernels: per-kernel breakdown (unfused only).
        assumptions: what the bound assumes, one statement each.
        counts_exact: False if some count is a lower bound (the bound stays valid).
    """

    model: BoundModel
    device: str
    precision_policy: PrecisionPolicy
    sizes: Mapping[str, int]
    time_s: float
    compute_time_s: float
    compute_time_s_by_unit: Mapping[str, float]
    memory_time_s: float
    dram_bytes: float
    l2_bytes: float
    flops: float
    flops_by_unit: Mapping[str, float]
    arithmetic_intensity: float
    bottleneck: Bottleneck
    kernels: Sequence[KernelBound] = ()
    assumptions: tuple[str, ...] = ()
    counts_exact: bool = True


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True, slots=True)
class CostArrays:
    """Every count of a graph evaluated at one binding, as numpy arrays.

    Groups (one per kernel FLOP group), traffic entries (one per kernel and
    tensor), tensors, contractions and spills, in the graph's orders.
    """

    sizes: Mapping[str, int]
    group_flops: np.ndarray
    read_bytes: np.ndarray
    written_bytes: np.ndarray
    tensor_bytes: np.ndarray
    compulsory_read_bytes: np.ndarray
    compulsory_written_bytes: np.ndarray
    contraction_points: np.ndarray
    contraction_output_elems: np.ndarray
    spill_groups: np.ndarray
    spill_group_elems: np.ndarray
    exact: bool


@dataclass(frozen=True, slots=True)
class _Compiled:
    fn: object
    names: tuple[str, ...]
    deferred: tuple[DeferredCount, ...]
    index: np.ndarray
    slices: Mapping[str, slice]
    exact: bool


def _collect(graph: EinsumGraph) -> dict[str, list[Count]]:
    parts: dict[str, list[Count]] = {
        "group_flops": [g.flops for k in graph.kernels for g in k.flop_groups],
        "read_bytes": [t.read_bytes for k in graph.kernels for t in k.traffic],
        "written_bytes": [t.written_bytes for k in graph.kernels for t in k.traffic],
        "tensor_bytes": [t.elements * t.dtype.itemsize_bytes for t in graph.tensors],
        "compulsory_read_bytes": [
            t.compulsory_read_elems * t.dtype.itemsize_bytes for t in graph.tensors
        ],
        "compulsory_written_bytes": [
            t.compulsory_written_elems * t.dtype.itemsize_bytes for t in graph.tensors
        ],
        "contraction_points": [c.points for c in graph.contractions],
        "contraction_output_elems": [c.output_elems for c in graph.contractions],
        "spill_groups": [s.groups for s in graph.spills],
        "spill_group_elems": [s.group_elems for s in graph.spills],
    }
    return parts


def _compile(graph: EinsumGraph) -> _Compiled:
    cached = graph.memo.get("compiled")
    if isinstance(cached, _Compiled):
        return cached
    parts = _collect(graph)
    unique: dict[SymExpr, int] = {}
    index: list[int] = []
    slices: dict[str, slice] = {}
    deferred: dict[str, DeferredCount] = {}
    exact = True
    for name, counts in parts.items():
        start = len(index)
        for c in counts:
            index.append(unique.setdefault(c.expr, len(unique)))
            deferred.update((d.name, d) for d in c.deferred)
            exact = exact and c.exact
        slices[name] = slice(start, len(index))
    sizes = tuple(d.name for d in graph.program.sizes)
    names = sizes + tuple(sorted(deferred))
    compiled = _Compiled(
        compile_exprs(list(unique), names), names,
        tuple(deferred[n] for n in sorted(deferred)), np.array(index, dtype=np.int64),
        slices, exact,
    )
    graph.memo["compiled"] = compiled
    return compiled


def evaluate_costs(graph: EinsumGraph, sizes: Mapping[str, int] | None = None) -> CostArrays:
    """Evaluate all of a graph's counts at a binding of its free sizes.

    The first call compiles every count into one numpy function (cached on the
    graph); deferred counts are cached per (structure, sizes).

    Raises:
        IRVerifyError: a size binding is invalid (E0220/E0221).
    """
    comp = _compile(graph)
    env = graph.size_env(sizes)
    exact = comp.exact
    args: list[int] = [env[n] for n in comp.names[: len(graph.program.sizes)]]
    for d in comp.deferred:
        value, ok = d.evaluate(env)
        args.append(value)
        exact = exact and ok
    raw = comp.fn(*args)  # type: ignore[operator]
    values = np.asarray(raw, dtype=float).reshape(-1)
    full = values[comp.index] if len(comp.index) else np.zeros(0)
    arrays = {name: full[sl] for name, sl in comp.slices.items()}
    return CostArrays(sizes=env, exact=exact, **arrays)


# --------------------------------------------------------------------------- pipes


@dataclass(frozen=True, slots=True)
class PipeTable:
    """The pipe of every FLOP group of a graph on one device under one policy.

    Attributes:
        labels: distinct pipe labels.
        group_pipe: index into ``labels`` per FLOP group.
        group_kernel: kernel index per FLOP group.
        peaks: peak FLOP/s per label.
        resolved: the resolution per label (fallback notes).
    """

    labels: tuple[str, ...]
    group_pipe: np.ndarray
    group_kernel: np.ndarray
    peaks: np.ndarray
    resolved: tuple[ResolvedPipe, ...]


def pipe_table(graph: EinsumGraph, spec: HardwareSpec, policy: PrecisionPolicy) -> PipeTable:
    """Resolve every FLOP group's pipe (cached per graph, spec and policy)."""
    memo = graph.memo.setdefault("pipes", {})
    assert isinstance(memo, dict)
    key = (spec, policy)
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    labels: dict[str, int] = {}
    resolved: list[ResolvedPipe] = []
    group_pipe, group_kernel = [], []
    for ki, k in enumerate(graph.kernels):
        for g in k.flop_groups:
            rp = resolve_pipe(spec, g.work, g.dtype, g.convolution, policy)
            if rp.label not in labels:
                labels[rp.label] = len(labels)
                resolved.append(rp)
            group_pipe.append(labels[rp.label])
            group_kernel.append(ki)
    table = PipeTable(
        tuple(labels), np.array(group_pipe, dtype=np.int64),
        np.array(group_kernel, dtype=np.int64),
        np.array([r.peak_flops_per_s for r in resolved], dtype=float), tuple(resolved),
    )
    memo[key] = table
    return table


def pipe_notes(table: PipeTable, graph: EinsumGraph, policy: PrecisionPolicy) -> list[str]:
    """Assumption lines describing the policy and each pipe's peak."""
    out = [f"precision policy `{policy}` (docs/bounds.md)"]
    for r in table.resolved:
        line = f"{r.label} work at {r.peak_flops_per_s / 1e12:.4g} TFLOP/s ({r.source})"
        out.append(line + (f"; {r.fallback}" if r.fallback else ""))
    del graph
    return out


def roofline_time(compute_s: float, memory_s: float) -> tuple[float, Bottleneck]:
    """``max(compute, memory)`` and which one binds.

    >>> roofline_time(2.0, 1.0)
    (2.0, 'compute')
    """
    if compute_s >= memory_s:
        return compute_s, "compute"
    return memory_s, "memory"


def intensity(flops: float, dram_bytes: float) -> float:
    """FLOPs per DRAM byte (inf without traffic)."""
    return flops / dram_bytes if dram_bytes > 0 else math.inf


# --------------------------------------------------------------------------- symbolic


@dataclass(frozen=True, slots=True)
class SymbolicCosts:
    """Formulas (text) for a graph's FLOPs and bytes, for reports.

    Attributes:
        flops: all FLOPs.
        flops_by_work: FLOPs per ``work dtype`` (e.g. ``contraction f32``).
        fused_bytes: compulsory DRAM bytes (fused model).
        unfused_bytes: bytes all kernels read and write (before L2 residency).
        kernels: ``(name, flops, bytes)`` per kernel.
        definitions: ``q0 = #{...}`` lines for deferred counts.
    """

    flops: str
    flops_by_work: Mapping[str, str]
    fused_bytes: str
    unfused_bytes: str
    kernels: tuple[tuple[str, str, str], ...]
    definitions: tuple[str, ...] = field(default=())


def symbolic_costs(graph: EinsumGraph) -> SymbolicCosts:
    """FLOP and byte formulas of a graph.

    >>> from solar.ir import parse_program
    >>> from solar.einsum import lift_to_einsum
    >>> g = lift_to_einsum(parse_program('''solar-ir 1
    ... program add
    ... size N = 8
    ... input X : f32[N]
    ... output Y : f32[N]
    ... kernel add { for i in 0 .. N { Y[i] = X[i] + 1.0 } }'''))
    >>> s = symbolic_costs(g)
    >>> s.flops, s.fused_bytes
    ('N', '8*N')
    """
    total = Count.of(0)
    by_work: dict[str, Count] = {}
    kernels = []
    unfused = Count.of(0)
    defs: dict[str, str] = {}
    for k in graph.kernels:
        for g in k.flop_groups:
            key = f"{g.work} {g.dtype}"
            by_work[key] = by_work.get(key, Count.of(0)) + g.flops
        total = total + k.flops
        unfused = unfused + k.bytes
        kernels.append((k.name, k.flops.formula, k.bytes.formula))
    fused = Count.of(0)
    for t in graph.tensors:
        fused = fused + (t.compulsory_read_elems + t.compulsory_written_elems) * (
            t.dtype.itemsize_bytes
        )
    for c in (total, unfused, fused):
        for d in c.deferred:
            defs[d.name] = f"{d.name} = {d.description}"
    return SymbolicCosts(
        flops=total.formula,
        flops_by_work={k: v.formula for k, v in by_work.items()},
        fused_bytes=fused.formula,
        unfused_bytes=unfused.formula,
        kernels=tuple(kernels),
        definitions=tuple(defs[n] for n in sorted(defs)),
    )


def pipe_flops(table: PipeTable, costs: CostArrays, n_kernels: int) -> np.ndarray:
    """FLOPs per (kernel, pipe) as a matrix."""
    out = np.zeros((n_kernels, len(table.labels)))
    if len(table.group_pipe):
        np.add.at(out, (table.group_kernel, table.group_pipe), costs.group_flops)
    return out


def as_dict(labels: Sequence[str], values: np.ndarray) -> dict[str, float]:
    """Label -> float mapping (sorted labels)."""
    return {lab: float(v) for lab, v in sorted(zip(labels, values, strict=True))}


# Note [Warm cache]
# Timed benchmarks repeat a program; data it touched in the previous repetition may
# still be in L2 (up to its capacity C). At most C bytes of reads can then hit, and at
# most C bytes of writes can be absorbed (clean lines are evicted for free), so at
# least (reads - C)+ + (writes - C)+ bytes still cross the DRAM interface. Every byte
# still passes through L2, so the L2 term counts all of them. Both are lower bounds.


def warm_split(read_bytes: float, written_bytes: float,
               l2_capacity_bytes: float | None) -> tuple[float, float]:
    """``(DRAM bytes, L2 bytes)`` of traffic that may start warm in an L2 of capacity C.

    An unknown capacity gives no warm credit (all bytes go to DRAM).

    >>> warm_split(10.0, 4.0, 6.0)
    (4.0, 14.0)
    """
    c = 0.0 if l2_capacity_bytes is None else float(l2_capacity_bytes)
    dram = max(0.0, read_bytes - c) + max(0.0, written_bytes - c)
    return dram, read_bytes + written_bytes
