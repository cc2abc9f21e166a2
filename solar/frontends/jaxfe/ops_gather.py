"""Lowerings of ``gather`` and the ``scatter`` family: one kernel each, indirect indexing.

Contract: ``EqnCtx -> None``. Any XLA dimension numbers (offset/collapsed/batching dims,
``start_index_map``) are supported, which covers embedding lookups (``E[idx]``),
``take_along_axis``, ``x[idx]`` and ``x.at[idx].set/add/mul/min/max``. The start
indices are read from the index tensor (``E[idx[b, s, 0], d]``: indirect, flagged
non-affine by the verifier). Index modes:

* ``PROMISE_IN_BOUNDS``: indices are used as they are;
* ``CLIP``: each start is clamped to ``[0, dim - size]`` into a kernel-local first (one
  loop nest over the index vectors, before the element loop);
* ``FILL_OR_DROP``: likewise clamped, plus an in-bounds mask; gather selects the fill
  value (NaN for floats, the minimum for integers) for out-of-bounds windows, scatter
  combines the reduction identity instead (drops the update). Branch-free, so the
  bounds count the work (a value-dependent ``if`` would count 0).

Scatters copy the operand into the output first, unless the operand is a dead
intermediate (XLA updates it in place; then only the updates are charged).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from solar.frontends.jaxfe.core import LOWERINGS, EqnCtx, EqnOperand, read
from solar.frontends.jaxfe.ops_reduce import reduce_init
from solar.frontends.kit import Nest, TensorInfo, TensorRef, UnsupportedOpError, iadd
from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    DType,
    Expr,
    IntLit,
    Reduce,
    ReduceOp,
    Stmt,
    Unary,
    lit,
)

__all__ = ["window_index"]

_INT_MIN = {DType.I8: -(2**7), DType.I32: -(2**31), DType.I64: -(2**63)}


def _mode(params: Any) -> str:
    mode = params.get("mode")
    name = getattr(mode, "name", None) or str(mode)
    return name.rsplit(".", 1)[-1].upper()


def window_index(
    rank: int,
    starts: dict[int, Expr],
    batching: dict[int, Expr],
    window_dims: Sequence[int],
    window_idx: Sequence[Expr],
) -> list[Expr]:
    """EqnOperand indices: ``start + window offset`` per dim (batching dims use the batch index).

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
        kb: Any,
        indices: EqnOperand,
        batch_ext: Sequence[int],
        index_map: Sequence[int],
        operand_shape: Sequence[int],
        sizes: Sequence[int],
        mode: str,
    ) -> None:
        self.mode = mode
        self.index_map = tuple(index_map)
        self.indices = indices
        self.batch_ext = tuple(batch_ext)
        self.locals: list[TensorRef] = []
        self.ok: TensorRef | None = None
        if mode not in ("CLIP", "FILL_OR_DROP"):
            return
        nest = Nest(kb, batch_ext, "b")
        shape = [e for e in batch_ext if e != 1]
        body: list[Stmt] = []
        conds: list[Expr] = []
        for j, k in enumerate(index_map):
            raw = read(indices, [*nest.idx, lit(j)])
            hi = operand_shape[k] - sizes[k]
            loc = kb.local(DType.I64, shape, "start")
            body.append(
                Assign(
                    self._at(loc, nest.idx), Call("min", (Call("max", (raw, IntLit(0))), lit(hi)))
                )
            )
            self.locals.append(loc)
            conds += [Binary("<=", IntLit(0), raw), Binary("<=", raw, lit(hi))]
        if mode == "FILL_OR_DROP":
            self.ok = kb.local(DType.BOOL, shape, "inb")
            body.append(Assign(self._at(self.ok, nest.idx), _all(conds)))
        if not nest.empty:
            kb.emit(*nest.wrap(body))

    def _at(self, loc: TensorRef, batch: Sequence[Expr]) -> Access:
        idx = tuple(b for b, e in zip(batch, self.batch_ext, strict=True) if e != 1)
        return loc[idx] if idx else loc.scalar()

    def starts(self, batch: Sequence[Expr]) -> dict[int, Expr]:
        """EqnOperand dim -> start expression at the batch point ``batch``."""
        if not self.locals:
            return {k: read(self.indices, [*batch, lit(j)]) for j, k in enumerate(self.index_map)}
        return {k: self._at(loc, batch) for k, loc in zip(self.index_map, self.locals, strict=True)}

    def valid(self, batch: Sequence[Expr]) -> Expr | None:
        """The in-bounds mask at ``batch`` (``FILL_OR_DROP`` only)."""
        return None if self.ok is None else self._at(self.ok, batch)


def _all(conds: Sequence[Expr]) -> Expr:
    out = conds[0]
    for c in conds[1:]:
        out = Binary("and", out, c)
    return out


@LOWERINGS.register("gather")
def _gather(ctx: EqnCtx) -> None:
    x, indices = ctx.ins
    dn = ctx.params["dimension_numbers"]
    offset_dims = tuple(dn.offset_dims)
    collapsed = set(dn.collapsed_slice_dims)
    op_batch = tuple(getattr(dn, "operand_batching_dims", ()) or ())
    idx_batch = tuple(getattr(dn, "start_indices_batching_dims", ()) or ())
    sizes = tuple(int(s) for s in ctx.params["slice_sizes"])
    out_shape = ctx.out_shape(0)
    dtype = ctx.out_dtype(0)
    out = ctx.out(0)
    kb = ctx.kernel()
    batch_pos = [d for d in range(len(out_shape)) if d not in offset_dims]
    st = _Starts(
        kb,
        indices,
        [out_shape[d] for d in batch_pos],
        tuple(dn.start_index_map),
        x.shape,
        sizes,
        _mode(ctx.params),
    )
    nest = Nest(kb, out_shape, "i")
    if nest.empty:
        return
    batch = [nest.idx[d] for d in batch_pos]
    window_dims = [k for k in range(len(x.shape)) if k not in collapsed and k not in op_batch]
    batching = {k: batch[idx_batch[j]] for j, k in enumerate(op_batch)}
    src = window_index(
        len(x.shape), st.starts(batch), batching, window_dims, [nest.idx[d] for d in offset_dims]
    )
    value = read(x, src)
    ok = st.valid(batch)
    if ok is not None:
        value = Call("select", (ok, value, _fill(ctx.params.get("fill_value"), dtype)))
    kb.emit(*nest.wrap([Assign(Access(out.ref.name, out.storage_index(nest.idx)), value)]))


def _fill(value: Any, dtype: DType) -> Expr:
    if value is not None:
        return lit(float(value) if dtype.is_float else int(value))
    if dtype.is_float:
        return lit(math.nan)
    if dtype == DType.BOOL:
        return lit(True)
    return lit(_INT_MIN[dtype])


_SCATTER_OPS: dict[str, ReduceOp | None] = {
    "scatter": None,
    "scatter-add": "+",
    "scatter_add": "+",
    "scatter-mul": "*",
    "scatter_mul": "*",
    "scatter-min": "min",
    "scatter_min": "min",
    "scatter-max": "max",
    "scatter_max": "max",
    "scatter-sub": "+",  # adds the negated updates
    "scatter_sub": "+",
}


@LOWERINGS.register(*_SCATTER_OPS)
def _scatter(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    x, indices, updates = ctx.ins[:3]
    if len(ctx.ins) != 3:
        raise UnsupportedOpError("variadic scatter")
    op = _SCATTER_OPS[ctx.prim]
    dn = ctx.params["dimension_numbers"]
    window_dims_u = tuple(dn.update_window_dims)
    inserted = set(dn.inserted_window_dims)
    op_batch = tuple(getattr(dn, "operand_batching_dims", ()) or ())
    idx_batch = tuple(getattr(dn, "scatter_indices_batching_dims", ()) or ())
    mode = _mode(ctx.params)
    out_shape = ctx.out_shape(0)
    inplace = ctx.lowerer.reusable(x)
    if not inplace and (donated := ctx.lowerer.take_donated(x)) is not None:
        x, inplace = donated, True
    out = x if inplace else ctx.out(0)
    assert isinstance(out, TensorInfo)
    kb = ctx.kernel()
    if not inplace:
        full = Nest(kb, out_shape, "i")
        if not full.empty:
            kb.emit(
                *full.wrap(
                    [
                        Assign(
                            Access(out.ref.name, out.storage_index(full.idx)),
                            read(x, full.idx),
                        )
                    ]
                )
            )
    u_shape = updates.shape
    batch_pos = [d for d in range(len(u_shape)) if d not in window_dims_u]
    window_dims = [k for k in range(len(out_shape)) if k not in inserted and k not in op_batch]
    # Window sizes: the update's window extents on window dims, 1 elsewhere.
    sizes = [1] * len(out_shape)
    for k, d in zip(window_dims, window_dims_u, strict=True):
        sizes[k] = u_shape[d]
    st = _Starts(
        kb,
        indices,
        [u_shape[d] for d in batch_pos],
        tuple(dn.scatter_dims_to_operand_dims),
        out_shape,
        sizes,
        mode,
    )
    nest = Nest(kb, u_shape, "u")
    if not nest.empty:
        batch = [nest.idx[d] for d in batch_pos]
        batching = {k: batch[idx_batch[j]] for j, k in enumerate(op_batch)}
        dst = window_index(
            len(out_shape),
            st.starts(batch),
            batching,
            window_dims,
            [nest.idx[d] for d in window_dims_u],
        )
        tgt = Access(out.ref.name, out.storage_index(dst))
        val = read(updates, nest.idx)
        if ctx.prim in ("scatter-sub", "scatter_sub"):
            val = Unary("-", val)
        ok = st.valid(batch)
        if ok is not None:
            # Out-of-bounds updates are dropped: combine the identity (or keep the old value).
            keep = tgt if op is None else reduce_init(op, updates.dtype)
            val = Call("select", (ok, val, keep))
        stmt: Stmt = Assign(tgt, val) if op is None else Reduce(tgt, op, val)
        kb.emit(*nest.wrap([stmt]))
    return (out,) if inplace else None
