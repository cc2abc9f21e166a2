"""Compiled graph costs: every count of an einsum graph, evaluable fast at any binding.

Contract: ``compile_costs(EinsumGraph) -> CompiledCosts`` (pure, done once per
graph by the caller) and ``CompiledCosts.evaluate(sizes) -> CostArrays``. The bound
models take a `CompiledCosts`; they never write into the graph. `symbolic_costs`
gives the same counts as formulas, for reports.

Compiling turns every count the bound models read (FLOP groups, per-kernel
traffic, compulsory traffic, contractions, spills) into one numpy function of the
sizes and the deferred counts, and precomputes what does not depend on the
binding: the distinct kinds of work (for pipe resolution) and the layout of the
unfused model's traffic entries. Deferred counts are cached per (structure, sizes)
by `solar.einsum`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from solar.bounds.errors import CountOverflowError
from solar.einsum import Count, DeferredCount, EinsumGraph, EinsumNode, NodeAccess, WorkClass
from solar.ir import DType, Expr, Name, SizeDecl, linear_form
from solar.symbolic import SymExpr, compile_exprs, inline_derived_sizes

__all__ = [
    "CompiledCosts",
    "alternative_algorithms",
    "CostArrays",
    "SymbolicCosts",
    "TrafficLayout",
    "WorkKind",
    "as_compiled",
    "compile_costs",
    "evaluate_costs",
    "symbolic_costs",
]


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
class WorkKind:
    """What decides the pipe of a FLOP group: work class, dtype, convolution or not."""

    work: WorkClass
    dtype: DType
    convolution: bool


@dataclass(frozen=True, slots=True, eq=False)
class TrafficLayout:
    """Binding-independent layout of the unfused model's traffic entries.

    Attributes:
        kernel: kernel index per traffic entry.
        input_order: input/param entries sorted by (tensor, kernel).
        input_group_start: per sorted entry, the position of its tensor's first entry.
        input_tensor_index: per sorted entry, the tensor's index in ``graph.tensors``.
        final_write: per entry, whether it is the last write of a program output, or of
            a temp an output views (Note [Alias kernels]: its elements must be in memory
            when the program ends).
        final_tensor_index: per entry, its tensor's index in ``graph.tensors``; a final
            write moves at most that tensor's compulsory written bytes.
    """

    kernel: np.ndarray
    input_order: np.ndarray
    input_group_start: np.ndarray
    input_tensor_index: np.ndarray
    final_write: np.ndarray
    final_tensor_index: np.ndarray


@dataclass(frozen=True, slots=True, eq=False)
class CompiledCosts:
    """A graph's counts compiled once; cheap to evaluate at many bindings.

    Attributes:
        graph: the graph the counts belong to.
        work_kinds: the distinct kinds of work, in order of first appearance.
        group_work: index into ``work_kinds`` per FLOP group.
        group_kernel: kernel index per FLOP group.
        layout: the unfused model's traffic layout.
        exact: False if some count is a lower bound (deferred counts may add more).
        alternatives: kernels where an algorithm doing less arithmetic than the one
            counted applies (`alternative_algorithms`); every bound states them.
    """

    graph: EinsumGraph
    work_kinds: tuple[WorkKind, ...]
    group_work: np.ndarray
    group_kernel: np.ndarray
    layout: TrafficLayout
    exact: bool
    _fn: Callable[..., object]
    _names: tuple[str, ...]
    _deferred: tuple[DeferredCount, ...]
    _index: np.ndarray
    _slices: Mapping[str, slice]
    alternatives: tuple[str, ...] = ()
    _memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)
    _last: dict[tuple[tuple[str, int], ...] | None, CostArrays] = field(
        default_factory=dict, compare=False, repr=False)

    def evaluate(self, sizes: Mapping[str, int] | None = None) -> CostArrays:
        """Evaluate every count at a binding of the graph's free sizes.

        The last binding's arrays are kept (read-only): the bound models of one report
        each evaluate the same binding (Note [Per-binding memo]).

        Raises:
            IRVerifyError: a size binding is invalid (E0220/E0221).
            CountOverflowError: a count overflows a float (E0455).
        """
        key = None if sizes is None else tuple(sorted(sizes.items()))
        last = self._last.get(key)
        if last is not None:
            return last
        arrays = self._evaluate(sizes)
        self._last.clear()  # the last binding only
        self._last[key] = arrays
        return arrays

    def memo(self, key: object, make: Callable[[], object]) -> object:
        """``make()``, computed once per ``key`` for this graph (binding-independent
        tables such as a device's pipes; Note [Per-binding memo])."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def _evaluate(self, sizes: Mapping[str, int] | None) -> CostArrays:
        graph = self.graph
        env = graph.size_env(sizes)
        exact = self.exact
        args: list[int] = [env[n] for n in self._names[: len(graph.program.sizes)]]
        for d in self._deferred:
            value, ok = d.evaluate(env)
            args.append(value)
            exact = exact and ok
        try:
            values = np.asarray(self._fn(*args), dtype=float).reshape(-1)
        except OverflowError:  # an exact integer count past 1.8e308
            values = np.asarray([math.inf])
        if not np.isfinite(values).all():
            raise CountOverflowError(
                "the program's FLOP or byte counts at these sizes are too large for a 64-bit "
                "float (over 1.8e308)",
                notes=(_sizes_note(env),),
            )
        full = values[self._index] if len(self._index) else np.zeros(0)
        full.flags.writeable = False  # shared by every reader of the memo
        arrays = {name: full[sl] for name, sl in self._slices.items()}
        return CostArrays(sizes=env, exact=exact, **arrays)


# Note [Per-binding memo]: a report at one binding runs four bound evaluations (unfused,
# fused, cache-aware, the cold work line), each reading the same counts and, per device,
# the same pipe table. A sweep re-binds thousands of times, so `CompiledCosts` keeps the
# last binding's arrays (read-only, so no reader can change another's) and each
# (device, policy) pipe table. Both are pure functions of their keys; the memo changes
# no result, only how often it is computed.


def _sizes_note(env: Mapping[str, int]) -> str:
    big = sorted(env.items(), key=lambda kv: -kv[1])[:4]
    return "largest sizes: " + ", ".join(f"{k}={v}" for k, v in big)


def _collect(graph: EinsumGraph) -> dict[str, list[Count]]:
    return {
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


def _traffic_layout(graph: EinsumGraph) -> TrafficLayout:
    tindex = {t.name: i for i, t in enumerate(graph.tensors)}
    kernel, tensor, role, writes = [], [], [], []
    for ki, k in enumerate(graph.kernels):
        for t in k.traffic:
            kernel.append(ki)
            tensor.append(tindex[t.tensor])
            role.append(t.role)
            writes.append(not t.written_elems.is_zero)
    n = len(kernel)
    inputs = [e for e in range(n) if role[e] in ("input", "param")]
    order = sorted(inputs, key=lambda e: (tensor[e], kernel[e]))
    starts: list[int] = []
    for pos, e in enumerate(order):
        starts.append(pos if pos == 0 or tensor[order[pos - 1]] != tensor[e] else starts[-1])
    viewed = {tindex[t.name] for t in graph.tensors
              if t.role == "temp" and not t.compulsory_written_elems.is_zero}
    last_writer: dict[int, int] = {}
    for e in range(n):
        if writes[e] and (role[e] == "output" or tensor[e] in viewed):
            last_writer[tensor[e]] = e
    final = np.zeros(n, dtype=bool)
    final[list(last_writer.values())] = True
    return TrafficLayout(
        np.array(kernel, dtype=np.int64), np.array(order, dtype=np.int64),
        np.array(starts, dtype=np.int64), np.array([tensor[e] for e in order], dtype=np.int64),
        final, np.array(tensor, dtype=np.int64),
    )


def compile_costs(graph: EinsumGraph) -> CompiledCosts:
    """Compile every count of ``graph`` into one numpy function (see the module docstring).

    Compile once per graph and pass the result to every bound evaluation; the
    work is proportional to the graph (a 300-kernel graph takes tens of ms).

    >>> from solar.ir import parse_program
    >>> from solar.einsum import lift_to_einsum
    >>> g = lift_to_einsum(parse_program('''solar-ir 1
    ... program add
    ... size N = 8
    ... input X : f32[N]
    ... output Y : f32[N]
    ... kernel add { for i in 0 .. N { Y[i] = X[i] + 1.0 } }'''))
    >>> c = compile_costs(g)
    >>> [float(v) for v in c.evaluate({"N": 16}).group_flops]
    [16.0]
    """
    unique: dict[SymExpr, int] = {}
    index: list[int] = []
    slices: dict[str, slice] = {}
    deferred: dict[str, DeferredCount] = {}
    exact = True
    for name, counts in _collect(graph).items():
        start = len(index)
        for c in counts:
            index.append(unique.setdefault(c.expr, len(unique)))
            deferred.update((d.name, d) for d in c.deferred)
            exact = exact and c.exact
        slices[name] = slice(start, len(index))
    names = tuple(d.name for d in graph.program.sizes) + tuple(sorted(deferred))
    kinds: dict[WorkKind, int] = {}
    group_work, group_kernel = [], []
    for ki, k in enumerate(graph.kernels):
        for g in k.flop_groups:
            group_work.append(kinds.setdefault(WorkKind(g.work, g.dtype, g.convolution),
                                               len(kinds)))
            group_kernel.append(ki)
    return CompiledCosts(
        graph=graph,
        work_kinds=tuple(kinds),
        group_work=np.array(group_work, dtype=np.int64),
        group_kernel=np.array(group_kernel, dtype=np.int64),
        layout=_traffic_layout(graph),
        exact=exact,
        _fn=cast("Callable[..., object]", compile_exprs(list(unique), names)),
        _names=names,
        _deferred=tuple(deferred[n] for n in sorted(deferred)),
        _index=np.array(index, dtype=np.int64),
        _slices=slices,
        alternatives=alternative_algorithms(graph),
    )


# Note [Bound contract]: a bound holds for every implementation that performs the same
# arithmetic as the program (any order, fusion, tiling, any precision the policy allows).
# Algorithms that do LESS arithmetic for the same result are outside it: fast matrix
# multiplication (Strassen-like), Winograd/FFT convolution, separable or running-sum
# window reductions, symmetric products computed by halves. `alternative_algorithms`
# names the kernels where one applies, and every bound states it (docs/bounds.md,
# "The contract").


def alternative_algorithms(graph: EinsumGraph) -> tuple[str, ...]:
    """One line per kernel and kind of algorithm that does less arithmetic than counted.

    Detected on the einsum nodes (Note [Bound contract]): a contraction whose two
    operands are one tensor with two output indices swapped (``A[i,k] * A[j,k]``: a
    symmetric result, SYRK computes half); a convolution whose windows all have stride
    and dilation 1 and one window extent >= 2 (Winograd, FFT); a matrix product with
    row, column and contracted indices (Strassen-like fast matrix multiplication); a
    reduction over overlapping sliding windows (pooling: separable passes or running
    sums).

    >>> from solar.ir import parse_program
    >>> from solar.einsum import lift_to_einsum
    >>> g = lift_to_einsum(parse_program('''solar-ir 1
    ... program syrk
    ... size N = 8
    ... input A : f32[N, N]
    ... output C : f32[N, N]
    ... kernel k { for i in 0 .. N { for j in 0 .. N { C[i, j] = 0.0
    ...   for k in 0 .. N { C[i, j] += A[i, k] * A[j, k] } } } }'''))
    >>> [line.split(":")[0] for line in alternative_algorithms(g)]
    ['symmetric product in `k`']
    """
    sizes = graph.size_env()
    lines: dict[str, None] = {}
    for node in graph.nodes:
        kind = _alternative(node, sizes)
        if kind is not None:
            lines[f"{kind} in `{node.kernel}`: {_ALTERNATIVES[kind]}"] = None
    return tuple(lines)


_ALTERNATIVES = {
    "symmetric product": "a SYRK-style implementation computes half of the symmetric "
    "result, fewer FLOPs than counted (not covered by the bound)",
    "stride-1 convolution": "Winograd or FFT convolution does fewer multiplications "
    "than the direct sum counted (not covered by the bound)",
    "matrix product": "Strassen-like fast matrix multiplication does fewer "
    "multiplications than counted (not covered by the bound)",
    "window reduction": "separable passes or running sums do fewer operations than the "
    "direct window counted (not covered by the bound)",
}


def _alternative(node: EinsumNode, sizes: Mapping[str, int]) -> str | None:
    if node.kind == "guard" or not node.domain.loops:
        return None
    loops = set(node.domain.vars)
    reads = [o for o in node.operands if o.mode == "read"]
    out_vars = {e.name for o in node.operands if o.mode == "write" for e in o.indices
                if isinstance(e, Name) and e.name in loops}
    windows = [w for o in reads for i in o.indices
               if (w := _window(i, node, loops, out_vars, sizes)) is not None]
    if node.work == "contraction":
        if _symmetric(reads, out_vars):
            return "symmetric product"
        if node.convolution:
            unit = all(stride == 1 and dilation == 1 for stride, dilation, _ in windows)
            if windows and unit and any(extent >= 2 for _, _, extent in windows):
                return "stride-1 convolution"
            return None
        return "matrix product" if _matrix_product(reads, out_vars) else None
    # overlapping windows only: disjoint ones (a reshape `g*Cg + c`, a 2x2/2 pool) leave no
    # partial result to share
    if node.kind == "reduce" and any(extent >= 2 and stride < (extent - 1) * dilation + 1
                                     for stride, dilation, extent in windows):
        return "window reduction"
    return None


def _window(index: Expr, node: EinsumNode, loops: set[str], out_vars: set[str],
            sizes: Mapping[str, int]) -> tuple[int, int, int] | None:
    """``(stride, dilation, window extent)`` of a subscript ``stride*h + dilation*r``."""
    lin = linear_form(index, sizes, loop_vars=loops)
    if lin is None or len(lin.coefs) != 2:
        return None
    (a, ca), (b, cb) = lin.coefs
    if (a in out_vars) == (b in out_vars):
        return None
    stride, (r, dilation) = (ca, (b, cb)) if a in out_vars else (cb, (a, ca))
    loop = next(lp for lp in node.domain.loops if lp.var == r)
    lo, hi = (linear_form(e, sizes, loop_vars=set()) for e in (loop.lo, loop.hi))
    if lo is None or hi is None:
        return None
    extent = max(0, -(-(hi.const - lo.const) // loop.step))
    return abs(stride), abs(dilation * loop.step), extent


def _matrix_product(reads: list[NodeAccess], out_vars: set[str]) -> bool:
    """``C[I, J] += A[I, K] * B[K, J]`` with I, J, K non-empty (a dot product is not)."""
    if len(reads) != 2:
        return False
    a, b = ({e.name for e in o.indices if isinstance(e, Name)} for o in reads)
    return bool((a - b) & out_vars and (b - a) & out_vars and (a & b) - out_vars)


def _symmetric(reads: list[NodeAccess], out_vars: set[str]) -> bool:
    if len(reads) != 2 or reads[0].tensor != reads[1].tensor:
        return False
    a, b = reads[0].indices, reads[1].indices
    if len(a) != len(b):
        return False
    diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    return len(diff) == 1 and all(isinstance(e, Name) and e.name in out_vars for e in diff[0])


def as_compiled(costs: EinsumGraph | CompiledCosts) -> CompiledCosts:
    """``costs`` itself, or a graph compiled now (for one-shot evaluations)."""
    return costs if isinstance(costs, CompiledCosts) else compile_costs(costs)


def evaluate_costs(
    costs: EinsumGraph | CompiledCosts, sizes: Mapping[str, int] | None = None
) -> CostArrays:
    """Evaluate all of a graph's counts at a binding of its free sizes.

    A graph is compiled first; to evaluate one graph at many bindings, compile it
    once with `compile_costs` and pass the result.

    Raises:
        IRVerifyError: a size binding is invalid (E0220/E0221).
    """
    return as_compiled(costs).evaluate(sizes)


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


def symbolic_costs(graph: EinsumGraph, sizes: Iterable[SizeDecl] = ()) -> SymbolicCosts:
    """FLOP and byte formulas of a graph; with the program's ``sizes``, the total FLOP and
    fused-byte formulas name free sizes only (derived sizes inlined).

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
    decls = tuple(sizes)
    return SymbolicCosts(
        flops=inline_derived_sizes(total.expr, decls),
        flops_by_work={k: v.formula for k, v in by_work.items()},
        fused_bytes=inline_derived_sizes(fused.expr, decls),
        unfused_bytes=unfused.formula,
        kernels=tuple(kernels),
        definitions=tuple(defs[n] for n in sorted(defs)),
    )
