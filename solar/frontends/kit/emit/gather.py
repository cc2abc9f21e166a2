"""The gather and scatter emitters: XLA's dimension numbers, indirect indexing.

Contract: framework-free (no torch, no jax). The most general gather and scatter are
XLA's (offset/collapsed/batching dims, a start-index map, index modes); PyTorch's
``index_select``/``gather``/``embedding`` and ``index_add``/``index_copy``/``scatter``/
``scatter_add``/``scatter_reduce`` are special cases an adapter describes with a
`GatherDims`/`ScatterDims` and a start reader (``index[i]``: a torch index tensor has
no index-vector dim, so the reader, not the emitter, knows how to read one start).
The start indices are read in the subscripts (``E[idx[b, s], d]``: indirect, flagged
non-affine by the verifier). Index modes:

* ``PROMISE_IN_BOUNDS``: indices are used as they are;
* ``CLIP``: each start is clamped to ``[0, dim - size]`` into a kernel-local first (one
  loop nest over the index vectors, before the element loop);
* ``FILL_OR_DROP``: likewise clamped, plus an in-bounds mask; gather selects the fill
  value (NaN for floats, the minimum for integers) for out-of-bounds windows, scatter
  combines the reduction identity instead (drops the update). Branch-free, so the
  bounds count the work (a value-dependent ``if`` would count 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from solar.frontends.kit.builder import TensorRef
from solar.frontends.kit.context import Sink
from solar.frontends.kit.dtypes import int_range, reduce_identity
from solar.frontends.kit.emit.reduce import Reader
from solar.frontends.kit.index import Nest, iadd
from solar.ir import Access, Assign, Binary, Call, DType, Expr, IntLit, Reduce, ReduceOp, Stmt, lit

__all__ = [
    "GatherDims",
    "IndexMode",
    "ScatterDims",
    "StartReader",
    "emit_gather",
    "emit_scatter",
    "gather_fill",
    "window_index",
]

IndexMode = Literal["PROMISE_IN_BOUNDS", "CLIP", "FILL_OR_DROP"]

StartReader = Callable[[Sequence[Expr], int], Expr]
"""Entry ``j`` of the index vector at the batch point (the index tensor's own dims)."""

Writer = Callable[[Sequence[Expr]], Access]


@dataclass(frozen=True, slots=True)
class GatherDims:
    """XLA's ``GatherDimensionNumbers`` with the slice sizes.

    Attributes:
        offset_dims: output dims that walk the window.
        collapsed: operand dims whose window (of size 1) has no output dim.
        start_index_map: the operand dim each index-vector entry starts.
        slice_sizes: the window size per operand dim.
        operand_batching: operand dims indexed by a batch dim of the indices.
        start_batching: for each of those, the batch position (of the output's
            non-offset dims) it equals.
    """

    offset_dims: tuple[int, ...]
    collapsed: frozenset[int]
    start_index_map: tuple[int, ...]
    slice_sizes: tuple[int, ...]
    operand_batching: tuple[int, ...] = ()
    start_batching: tuple[int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class ScatterDims:
    """XLA's ``ScatterDimensionNumbers``.

    Attributes:
        update_window_dims: update dims that walk the window.
        inserted: operand dims whose window (of size 1) has no update dim.
        scatter_to_operand: the operand dim each index-vector entry starts.
        operand_batching / start_batching: as in `GatherDims`.
    """

    update_window_dims: tuple[int, ...]
    inserted: frozenset[int]
    scatter_to_operand: tuple[int, ...]
    operand_batching: tuple[int, ...] = ()
    start_batching: tuple[int, ...] = field(default=())


def window_index(
    rank: int,
    starts: dict[int, Expr],
    batching: dict[int, Expr],
    window_dims: Sequence[int],
    window_idx: Sequence[Expr],
) -> list[Expr]:
    """Operand indices: ``start + window offset`` per dim (batching dims use the batch index).

    Args:
        rank: operand rank.
        starts: operand dim -> start expression (from the index vector).
        batching: operand dim -> batch index expression (operand batching dims).
        window_dims: operand dims that carry a window offset, in order.
        window_idx: the window offsets, one per ``window_dims`` entry.
    """
    idx: list[Expr] = []
    offsets = dict(zip(window_dims, window_idx, strict=True))
    for k in range(rank):
        if k in batching:
            idx.append(batching[k])
            continue
        base: Expr = starts.get(k, IntLit(0))
        idx.append(iadd(offsets[k], base) if k in offsets else base)
    return idx


class _Starts:
    """Start indices of a gather/scatter, one per index-vector entry, and a validity mask.

    ``PROMISE_IN_BOUNDS`` reads the index tensor directly in the subscripts. ``CLIP`` and
    ``FILL_OR_DROP`` first compute, per index vector (one loop nest over the batch dims),
    the clamped starts (2 FLOPs each) and, for ``FILL_OR_DROP``, whether the window is in
    bounds, into kernel-locals; the element loop then reads those.
    """

    def __init__(
        self,
        kb: Sink,
        start: StartReader,
        batch_ext: Sequence[int],
        index_map: Sequence[int],
        operand_shape: Sequence[int],
        sizes: Sequence[int],
        mode: IndexMode,
    ) -> None:
        self.index_map = tuple(index_map)
        self.start = start
        self.batch_ext = tuple(batch_ext)
        self.locals: list[TensorRef] = []
        self.ok: TensorRef | None = None
        if mode == "PROMISE_IN_BOUNDS":
            return
        nest = Nest(kb, batch_ext, "b")
        shape = [e for e in batch_ext if e != 1]
        body: list[Stmt] = []
        conds: list[Expr] = []
        for j, k in enumerate(index_map):
            raw = start(nest.idx, j)
            hi = operand_shape[k] - sizes[k]
            loc = kb.local(DType.I64, shape, "start")
            clamped = Call("min", (Call("max", (raw, IntLit(0))), lit(hi)))
            body.append(Assign(self._at(loc, nest.idx), clamped))
            self.locals.append(loc)
            conds += [Binary("<=", IntLit(0), raw), Binary("<=", raw, lit(hi))]
        if mode == "FILL_OR_DROP":
            self.ok = kb.local(DType.BOOL, shape, "inb")
            inside = conds[0]
            for c in conds[1:]:
                inside = Binary("and", inside, c)
            body.append(Assign(self._at(self.ok, nest.idx), inside))
        if not nest.empty:
            kb.emit(*nest.wrap(body))

    def _at(self, loc: TensorRef, batch: Sequence[Expr]) -> Access:
        idx = tuple(b for b, e in zip(batch, self.batch_ext, strict=True) if e != 1)
        return loc[idx] if idx else loc.scalar()

    def starts(self, batch: Sequence[Expr]) -> dict[int, Expr]:
        """Operand dim -> start expression at the batch point ``batch``."""
        if not self.locals:
            return {k: self.start(batch, j) for j, k in enumerate(self.index_map)}
        return {k: self._at(loc, batch) for k, loc in zip(self.index_map, self.locals, strict=True)}

    def valid(self, batch: Sequence[Expr]) -> Expr | None:
        """The in-bounds mask at ``batch`` (``FILL_OR_DROP`` only)."""
        return None if self.ok is None else self._at(self.ok, batch)


def gather_fill(dtype: DType) -> Expr:
    """XLA's fill of an out-of-bounds gather window: NaN, true, or the smallest integer."""
    if dtype.is_float:
        return lit(math.nan)
    if dtype == DType.BOOL:
        return lit(True)
    return lit(int_range(dtype)[0])


def emit_gather(
    kb: Sink,
    shape: Sequence[int],
    read: Reader,
    start: StartReader,
    dims: GatherDims,
    out_shape: Sequence[int],
    write: Writer,
    *,
    mode: IndexMode = "PROMISE_IN_BOUNDS",
    fill: Expr | None = None,
) -> None:
    """``out[b..., w...] = x[start(b) + w]`` over the output (XLA ``gather``).

    Args:
        kb: the kernel to emit into.
        shape: the operand's shape; ``read`` reads it.
        start: reads entry ``j`` of the index vector at a batch point.
        dims: the dimension numbers.
        out_shape / write: the output's shape and store access.
        mode: the index mode.
        fill: ``FILL_OR_DROP``'s value for out-of-bounds windows.
    """
    batch_pos = [d for d in range(len(out_shape)) if d not in dims.offset_dims]
    st = _Starts(
        kb,
        start,
        [out_shape[d] for d in batch_pos],
        dims.start_index_map,
        shape,
        dims.slice_sizes,
        mode,
    )
    nest = Nest(kb, out_shape, "i")
    if nest.empty:
        return
    batch = [nest.idx[d] for d in batch_pos]
    excluded = dims.collapsed | set(dims.operand_batching)
    window_dims = [k for k in range(len(shape)) if k not in excluded]
    batching = {k: batch[dims.start_batching[j]] for j, k in enumerate(dims.operand_batching)}
    src = window_index(
        len(shape), st.starts(batch), batching, window_dims, [nest.idx[d] for d in dims.offset_dims]
    )
    value = read(src)
    ok = st.valid(batch)
    if ok is not None:
        value = Call("select", (ok, value, fill if fill is not None else lit(math.nan)))
    kb.emit(*nest.wrap([Assign(write(nest.idx), value)]))


def emit_scatter(
    kb: Sink,
    out_shape: Sequence[int],
    write: Writer,
    start: StartReader,
    dims: ScatterDims,
    u_shape: Sequence[int],
    update: Reader,
    update_dtype: DType,
    op: ReduceOp | None,
    *,
    mode: IndexMode = "PROMISE_IN_BOUNDS",
    copy: Reader | None = None,
    hint: str = "u",
    also: Callable[[Sequence[Expr]], list[Stmt]] | None = None,
) -> None:
    """``out = x`` (when ``copy`` reads ``x``), then ``out[start(b) + w] op= update[b, w]``
    for every update element (XLA ``scatter``; ``op`` ``None`` overwrites).

    Out-of-bounds updates (``FILL_OR_DROP``) combine the identity of ``op`` (or keep the
    old value). ``hint`` names the update loop's variables. ``also`` adds statements at
    the same destination index after each update, in the same loop nest (PyTorch's
    ``scatter_reduce(mean)`` counts its targets there).
    """
    if copy is not None:
        full = Nest(kb, out_shape, "i")
        if not full.empty:
            kb.emit(*full.wrap([Assign(write(full.idx), copy(full.idx))]))
    batch_pos = [d for d in range(len(u_shape)) if d not in dims.update_window_dims]
    excluded = dims.inserted | set(dims.operand_batching)
    window_dims = [k for k in range(len(out_shape)) if k not in excluded]
    # Window sizes: the update's window extents on window dims, 1 elsewhere.
    sizes = [1] * len(out_shape)
    for k, d in zip(window_dims, dims.update_window_dims, strict=True):
        sizes[k] = u_shape[d]
    st = _Starts(
        kb,
        start,
        [u_shape[d] for d in batch_pos],
        dims.scatter_to_operand,
        out_shape,
        sizes,
        mode,
    )
    nest = Nest(kb, u_shape, hint)
    if nest.empty:
        return
    batch = [nest.idx[d] for d in batch_pos]
    batching = {k: batch[dims.start_batching[j]] for j, k in enumerate(dims.operand_batching)}
    dst = window_index(
        len(out_shape),
        st.starts(batch),
        batching,
        window_dims,
        [nest.idx[d] for d in dims.update_window_dims],
    )
    tgt = write(dst)
    val = update(nest.idx)
    ok = st.valid(batch)
    if ok is not None:
        keep = tgt if op is None else reduce_identity(op, update_dtype)
        val = Call("select", (ok, val, keep))
    stmt: Stmt = Assign(tgt, val) if op is None else Reduce(tgt, op, val)
    kb.emit(*nest.wrap([stmt, *(also(dst) if also is not None else ())]))
