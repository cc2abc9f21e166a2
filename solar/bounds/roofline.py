"""Shared roofline core: bound results, pipe tables and the roofline arithmetic.

Contract: the `Bound` result type every model returns, the pipe of every FLOP
group on a device (`pipe_table`), and the formulas every model shares:
``time >= max(compute time, memory time)`` (`roofline_time`), the memory time of
DRAM and L2 traffic (`memory_time_s`), the warm-cache split (`warm_split`) and
arithmetic intensity. A model only decides which bytes count and how kernels
combine.

Note [Overlapping units]: compute time is reported per pipe (unit and precision),
and the bound combines distinct units with a MAX, not a sum: tensor cores and vector
units run concurrently, so only the busiest unit is a proven lower bound. Pipes that
occupy one unit add (Note [Shared units], `unit_time`): every matrix-unit pipe (TF32,
3xTF32, BF16, FP8) issues on the same tensor cores, so a program with TF32 and 3xTF32
contractions takes their sum there. Vector pipes stay apart (a conservative max: INT32
and FP32 lanes issue concurrently on recent GPUs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, cast, overload

import numpy as np

from solar.bounds.costs import CompiledCosts, CostArrays
from solar.bounds.precision import Pipe, PrecisionPolicy, ResolvedPipe, resolve_pipe
from solar.bounds.recast import recast_note
from solar.einsum import WorkClass
from solar.hw import HardwareSpec
from solar.options import BoundModel, CacheState

__all__ = [
    "Bottleneck",
    "Bound",
    "BoundModel",
    "CacheState",
    "KernelBound",
    "KernelBreakdown",
    "UNITS_NOTE",
    "PipeTable",
    "arithmetic_intensity",
    "assemble_bound",
    "by_pipe",
    "unit_time",
    "unit_time_of",
    "memory_time_s",
    "pipe_flops",
    "pipe_labels",
    "pipe_notes",
    "pipe_table",
    "roofline_time",
    "warm_split",
]

Bottleneck: TypeAlias = Literal["compute", "memory"]

# The assumption line of the models that charge one compute time for the whole program.
UNITS_NOTE = ("pipes on the tensor cores add and distinct units overlap: compute time is the "
              "busiest unit's time (Note [Shared units])")


@dataclass(frozen=True, slots=True)
class KernelBound:
    """One kernel's share of an unfused bound.

    Attributes:
        name: kernel name.
        flops: FLOPs.
        dram_bytes: bytes charged at DRAM bandwidth.
        l2_bytes: bytes served by L2 (not DRAM); the L2 term charges these plus the
            DRAM bytes (Note [L2 pass]).
        work_class: the kernel's work class (``contraction`` or ``vector``).
        pipe: its busiest pipe (requested unit and precision), or ``None`` when the
            kernel executes no FLOPs.
        compute_time_s: busiest unit's time (`unit_time`: its tensor pipes add).
        memory_time_s: max of DRAM and L2 time.
        time_s: ``max(compute_time_s, memory_time_s)``.
        bottleneck: which term is larger.
        compute_time_s_by_pipe: the kernel's time on each pipe it uses, keyed by the
            resolved pipe (its source unit decides which pipes share a unit:
            `unit_time_of`); empty for a kernel without FLOPs.
    """

    name: str
    flops: float
    dram_bytes: float
    l2_bytes: float
    work_class: WorkClass
    pipe: Pipe | None
    compute_time_s: float
    memory_time_s: float
    time_s: float
    bottleneck: Bottleneck
    compute_time_s_by_pipe: Mapping[ResolvedPipe, float]


class KernelBreakdown(Sequence[KernelBound]):
    """Per-kernel bounds, built on access from columns (cheap to create per binding).

    Args:
        names: kernel names.
        work_classes: work class per kernel.
        columns: flops, DRAM bytes, L2 bytes, compute and memory time per kernel.
        pipes: busiest pipe per kernel (``None`` without FLOPs).
        pipe_times: the resolved pipes and each kernel's time on them (a kernels x pipes
            matrix).
    """

    __slots__ = ("_cols", "_names", "_pipe_times", "_pipes", "_work_classes")

    def __init__(self, names: Sequence[str], work_classes: Sequence[WorkClass],
                 columns: Sequence[Sequence[float]], pipes: Sequence[Pipe | None],
                 pipe_times: tuple[Sequence[ResolvedPipe], np.ndarray]) -> None:
        self._names = names
        self._work_classes = work_classes
        self._cols = columns
        self._pipes = pipes
        self._pipe_times = pipe_times

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
        time_s, bottleneck = roofline_time(compute, memory)
        resolved, times = self._pipe_times
        by_pipe = {r: float(t) for r, t in zip(resolved, times[i].tolist(), strict=True) if t > 0}
        return KernelBound(
            name=self._names[i], flops=flops, dram_bytes=dram, l2_bytes=l2,
            work_class=self._work_classes[i], pipe=self._pipes[i], compute_time_s=compute,
            memory_time_s=memory, time_s=time_s, bottleneck=bottleneck,
            compute_time_s_by_pipe=by_pipe,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    # unhashable: a class that defines __eq__ and no __hash__ gets __hash__ = None

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
        compute_time_s_by_pipe: time per pipe (labelled only at the report's edge,
            `pipe_labels`: ``tensor:tf32``...).
        memory_time_s: memory term.
        dram_bytes: bytes charged at DRAM bandwidth.
        l2_bytes: bytes charged at L2 bandwidth: all bytes moved (fused, cache-aware);
            the bytes served by L2, disjoint from ``dram_bytes`` (unfused, whose L2 term
            charges both: Note [L2 pass]).
        flops: all FLOPs.
        flops_by_pipe: FLOPs per pipe.
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
    compute_time_s_by_pipe: Mapping[Pipe, float]
    memory_time_s: float
    dram_bytes: float
    l2_bytes: float
    flops: float
    flops_by_pipe: Mapping[Pipe, float]
    arithmetic_intensity: float
    bottleneck: Bottleneck
    kernels: Sequence[KernelBound] = ()
    assumptions: tuple[str, ...] = ()
    counts_exact: bool = True


def assemble_bound(
    model: BoundModel,
    spec: HardwareSpec,
    precision_policy: PrecisionPolicy,
    compiled: CompiledCosts,
    costs: CostArrays,
    *,
    time_s: float,
    bottleneck: Bottleneck,
    compute_time_s: float,
    compute_time_s_by_pipe: Mapping[Pipe, float],
    memory_s: float,
    dram_bytes: float,
    l2_bytes: float,
    flops: float,
    flops_by_pipe: Mapping[Pipe, float],
    notes: Sequence[str],
    kernels: Sequence[KernelBound] = (),
) -> Bound:
    """The one assembly of a `Bound`, for every model: its assumptions end with the
    graph's alternatives and, where a count is only a lower bound, a note saying so; its
    arithmetic intensity is FLOPs per DRAM byte (inf when no DRAM byte moves)."""
    assumptions = [*notes, *compiled.alternatives]
    if not costs.exact:
        assumptions.append("some counts are lower bounds (see docs/bounds.md)")
    return Bound(
        model=model, device=spec.name, precision_policy=precision_policy,
        sizes=dict(costs.sizes), time_s=time_s, compute_time_s=compute_time_s,
        compute_time_s_by_pipe=compute_time_s_by_pipe, memory_time_s=memory_s,
        dram_bytes=dram_bytes, l2_bytes=l2_bytes, flops=flops, flops_by_pipe=flops_by_pipe,
        arithmetic_intensity=arithmetic_intensity(flops, dram_bytes, if_none_moved=math.inf),
        bottleneck=bottleneck, kernels=kernels, assumptions=tuple(assumptions),
        counts_exact=costs.exact,
    )


# --------------------------------------------------------------------------- pipes


@dataclass(frozen=True, slots=True, eq=False)
class PipeTable:
    """The pipe of every FLOP group of a graph on one device under one policy.

    Attributes:
        resolved: the distinct pipes the work is charged to (one per requested
            `Pipe`), resolved on the device, in order of first appearance.
        group_pipe: index into ``resolved`` per FLOP group.
        group_kernel: kernel index per FLOP group.
        peaks: peak FLOP/s per pipe.
    """

    resolved: tuple[ResolvedPipe, ...]
    group_pipe: np.ndarray
    group_kernel: np.ndarray
    peaks: np.ndarray

    @property
    def pipes(self) -> tuple[Pipe, ...]:
        """The pipe each column is charged to (`ResolvedPipe.requested`)."""
        return tuple(r.requested for r in self.resolved)


def pipe_table(compiled: CompiledCosts, spec: HardwareSpec, policy: PrecisionPolicy) -> PipeTable:
    """Resolve every FLOP group's pipe (once per distinct kind of work; kept per device
    and policy, Note [Per-binding memo] in `solar.bounds.costs`).

    Raises:
        BoundError: E0452 the spec has no usable peak for some work.
    """
    # keyed by the spec's identity (it holds dicts, so no hash); the entry keeps the
    # spec alive, so its id cannot be reused while the entry exists
    held = compiled.memo(("pipes", id(spec), policy),
                         lambda: (spec, _pipe_table(compiled, spec, policy)))
    return cast("tuple[HardwareSpec, PipeTable]", held)[1]


def _pipe_table(compiled: CompiledCosts, spec: HardwareSpec, policy: PrecisionPolicy) -> PipeTable:
    index: dict[Pipe, int] = {}
    resolved: list[ResolvedPipe] = []
    kind_pipe: list[int] = []
    for kind in compiled.work_kinds:
        rp = resolve_pipe(spec, kind.work, kind.dtype, kind.convolution, policy)
        if rp.requested not in index:
            index[rp.requested] = len(index)
            resolved.append(rp)
        elif rp.peak_flops_per_s > resolved[index[rp.requested]].peak_flops_per_s:
            # Two fallbacks for one pipe (float and integer work on a TPU's absent
            # vector:fp32): one pipe, so the larger peak, which keeps a lower bound.
            resolved[index[rp.requested]] = rp
        kind_pipe.append(index[rp.requested])
    group_pipe = np.array(kind_pipe, dtype=np.int64)[compiled.group_work]
    return PipeTable(
        tuple(resolved), group_pipe, compiled.group_kernel,
        np.array([r.peak_flops_per_s for r in resolved], dtype=float),
    )


def pipe_notes(table: PipeTable, policy: PrecisionPolicy) -> list[str]:
    """Assumption lines describing the policy and each pipe's peak."""
    out = [f"precision policy `{policy}` (docs/bounds.md)"]
    recast = recast_note(policy)
    if recast is not None:
        out.append(recast)
    for r in table.resolved:
        src = r.source
        how = src.label if src.passes == 1 else (
            f"{src.passes} passes of {src.unit}:{src.precision.value} at "
            f"{r.peak_flops_per_s * src.passes / 1e12:.4g} TFLOP/s: fp32-accurate emulation")
        line = f"{r.label} work at {r.peak_flops_per_s / 1e12:.4g} TFLOP/s ({how})"
        out.append(line + (f"; {r.fallback}" if r.fallback else ""))
    tensor = [r.label for r in table.resolved if r.source.unit == "tensor"]
    if len(tensor) > 1:
        out.append(f"{', '.join(tensor)} share the tensor cores: their times add "
                   "(Note [Shared units])")
    return out


def unit_time(table: PipeTable, times: np.ndarray) -> np.ndarray:
    """Compute time from per-pipe times (last axis): the tensor pipes summed (one matrix
    unit), then the max over that sum and each other pipe (Note [Shared units]).

    >>> import numpy as np
    >>> from solar.hw import Precision
    >>> from solar.bounds.precision import Pipe, ResolvedPipe
    >>> rp = [ResolvedPipe(Pipe(u, p, n), 1.0, Pipe(u, p), "") for u, p, n in
    ...       (("tensor", Precision.TF32, 1), ("tensor", Precision.TF32, 3),
    ...        ("vector", Precision.FP32, 1))]
    >>> t = PipeTable(tuple(rp), np.zeros(0), np.zeros(0), np.ones(3))
    >>> unit_time(t, np.array([[1.0, 2.0, 2.5], [1.0, 0.5, 2.5]])).tolist()
    [3.0, 2.5]
    """
    if times.shape[-1] == 0:
        return np.asarray(times.sum(axis=-1))
    shared = np.array([_on_tensor_unit(r) for r in table.resolved])
    if shared.sum() < 2:
        return np.asarray(times.max(axis=-1))
    tensor = times[..., shared].sum(axis=-1, keepdims=True)
    return np.asarray(np.concatenate([tensor, times[..., ~shared]], axis=-1).max(axis=-1))


def unit_time_of(times: Mapping[ResolvedPipe, float]) -> float:
    """`unit_time` of a pipe -> time mapping: the pipes on the tensor cores summed, then
    the max over that sum and each other pipe (Note [Shared units]).

    >>> from solar.hw import Precision
    >>> from solar.bounds.precision import Pipe, ResolvedPipe
    >>> tf32, x3, fp32 = (ResolvedPipe(Pipe(u, p, n), 1.0, Pipe(u, p), "") for u, p, n in
    ...                   (("tensor", Precision.TF32, 1), ("tensor", Precision.TF32, 3),
    ...                    ("vector", Precision.FP32, 1)))
    >>> unit_time_of({tf32: 1.0, x3: 2.0, fp32: 2.5}), unit_time_of({tf32: 1.0, fp32: 2.5})
    (3.0, 2.5)
    >>> unit_time_of({})
    0.0
    """
    tensor = sum((t for r, t in times.items() if _on_tensor_unit(r)), 0.0)
    return max([tensor, *(t for r, t in times.items() if not _on_tensor_unit(r))])


def _on_tensor_unit(r: ResolvedPipe) -> bool:
    # the unit of the figure the peak comes from, which is where the work runs
    return r.source.unit == "tensor"


def pipe_flops(table: PipeTable, costs: CostArrays, n_kernels: int) -> np.ndarray:
    """FLOPs per (kernel, pipe) as a matrix."""
    out = np.zeros((n_kernels, len(table.resolved)))
    if len(table.group_pipe):
        np.add.at(out, (table.group_kernel, table.group_pipe), costs.group_flops)
    return out


def by_pipe(pipes: Sequence[Pipe], values: np.ndarray) -> dict[Pipe, float]:
    """Pipe -> float mapping, in label order."""
    pairs = sorted(zip(pipes, values.tolist(), strict=True), key=lambda pv: pv[0].label)
    return {p: float(v) for p, v in pairs}


def pipe_labels(values: Mapping[Pipe, float]) -> dict[str, float]:
    """The report's edge: `Pipe.label` -> value, sorted by label.

    >>> from solar.hw import Precision
    >>> pipe_labels({Pipe("vector", Precision.FP32): 2.0, Pipe("tensor", Precision.TF32, 3): 1.0})
    {'tensor:3xtf32': 1.0, 'vector:fp32': 2.0}
    """
    return {p.label: v for p, v in sorted(values.items(), key=lambda pv: pv[0].label)}


# --------------------------------------------------------------------------- roofline


def roofline_time(compute_s: float, memory_s: float) -> tuple[float, Bottleneck]:
    """``max(compute, memory)`` and which one binds.

    >>> roofline_time(2.0, 1.0)
    (2.0, 'compute')
    """
    if compute_s >= memory_s:
        return compute_s, "compute"
    return memory_s, "memory"


@overload
def memory_time_s(spec: HardwareSpec, dram_bytes: float, l2_bytes: float) -> float: ...


@overload
def memory_time_s(spec: HardwareSpec, dram_bytes: np.ndarray, l2_bytes: np.ndarray) -> np.ndarray:
    ...


def memory_time_s(
    spec: HardwareSpec, dram_bytes: float | np.ndarray, l2_bytes: float | np.ndarray
) -> float | np.ndarray:
    """``max(DRAM bytes / DRAM bandwidth, L2 bytes / L2 bandwidth)``, elementwise.

    An unknown L2 bandwidth makes L2 traffic free (the optimistic, hence safe, choice).

    >>> from solar.hw import load_hardware_spec
    >>> h100 = load_hardware_spec("H100_SXM")
    >>> memory_time_s(h100, h100.dram_bandwidth_bytes_per_s, 0.0)
    1.0
    """
    l2_bw = spec.l2_bandwidth_bytes_per_s
    time = np.maximum(dram_bytes / spec.dram_bandwidth_bytes_per_s,
                      l2_bytes / l2_bw if l2_bw else np.zeros(np.shape(l2_bytes)))
    return time if isinstance(dram_bytes, np.ndarray) else float(time)


def arithmetic_intensity(flops: float, moved_bytes: float, *, if_none_moved: float = 0.0) -> float:
    """FLOPs per byte moved, or ``if_none_moved`` when no byte moves.

    Reports use 0 for "no traffic" (JSON has no infinity); `Bound.arithmetic_intensity`
    passes ``math.inf``.

    >>> arithmetic_intensity(8.0, 2.0), arithmetic_intensity(8.0, 0.0)
    (4.0, 0.0)
    """
    return flops / moved_bytes if moved_bytes > 0 else if_none_moved


# Note [Warm cache]
# Timed benchmarks repeat a program; data it touched in the previous repetition may
# still be in L2 (up to its capacity C: the caches that keep data between kernel
# launches; registers, shared memory and Tensor Memory do not). In the periodic steady
# state of such a loop the cache holds at most C bytes at the boundary between two
# repetitions, and each byte held there saves at most ONE DRAM transfer: a read hit of an
# input element in the next repetition (its first read there; later reads of it are not
# compulsory traffic) or the write-back of an output element of this repetition that the
# next one overwrites while it is still cached (inputs and outputs are distinct tensors,
# so a byte cannot do both). Every other compulsory byte crosses the DRAM interface once
# per repetition, so a repetition moves at least (R + W - C)+ DRAM bytes, where R and W
# are its compulsory read and write bytes. (Over n timed repetitions the n + 1 boundaries
# save at most (n + 1) C, i.e. C / n more per repetition; the steady state is the limit.)
# This replaces (R - C)+ + (W - C)+, which let the same C bytes serve both as cached
# reads and as absorbed writes. Every byte still passes through L2, so the L2 term counts
# all R + W. Both are lower bounds.
#
# Note [L2 pass]: on every bundled device each byte a kernel moves passes through the
# L2 (NVIDIA: the L2 is the point of coherence of device memory; MI300X: the Infinity
# Cache is memory-side; TPUs: no L2 bandwidth, so the term is free). So under either
# cache state the L2 term counts ALL bytes moved, and a warm start changes only the
# DRAM term, which it can only lower: warm <= cold for every model (a property test).
# An unknown capacity is unlimited under both states (the optimistic reading the spec
# contract asks for), never unlimited for one and zero for the other.


def warm_split(read_bytes: float, written_bytes: float,
               l2_capacity_bytes: float | None) -> tuple[float, float]:
    """``(DRAM bytes, L2 bytes)`` of traffic that may start warm in an L2 of capacity C.

    DRAM: ``(R + W - C)+`` per repetition of a periodic benchmark loop (Note [Warm
    cache]). An unknown capacity is unlimited (Note [L2 pass]): no DRAM traffic is proven.

    >>> warm_split(10.0, 4.0, 6.0)
    (8.0, 14.0)
    >>> warm_split(10.0, 4.0, None)
    (0.0, 14.0)
    """
    c = math.inf if l2_capacity_bytes is None else float(l2_capacity_bytes)
    dram = max(0.0, read_bytes + written_bytes - c)
    return dram, read_bytes + written_bytes
