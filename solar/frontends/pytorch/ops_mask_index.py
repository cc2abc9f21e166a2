"""Boolean-mask indexing: ``x[:, mask]`` (``aten.index.Tensor`` with a bool index).

Contract: `is_mask_index(indices)` says whether an ``aten.index``/``index_put`` call
selects with a boolean mask (the other entries slices); `lower_mask_index` lowers the
selection as one kernel that compacts, in order, the slices of ``x`` the mask selects,
and `lower_mask_index_put` the assignment ``x[mask] = v`` (``+=`` with ``accumulate``;
the backward of a selection) by the same walk (Note [Mask compaction]). Masks mixed with
integer index tensors are left uncovered.

Note [Mask compaction]
~~~~~~~~~~~~~~~~~~~~~~
A mask selection's output length is the number of set elements, known only from the
values: the capture runs on real tensors (fake tensors cannot produce the shape), so
the output shape is the real run's, as for the other value-dependent selections
(``nonzero``, ``unique``). The IR then computes the selection itself, so validation
checks it and it follows a mask that changes: a kernel-local counter ``c`` walks the
mask in row-major order (``seq`` loops) and each set element copies its slice to
position ``c`` of the output::

    c[] = 0
    seq for m in 0 .. M {
      if mask[m] {
        for a in 0 .. A { out[a, c[]] = x[a, m] }
        c[] += 1
      }
    }

The mask is read once, whole (charged); the copies and the count run under a value
guard, so the bounds charge neither their reads nor their writes (a lower bound: at
most the selected share of ``x`` moves, and that is not known without the values).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit import TensorInfo, UnsupportedOpError, cast, nest
from solar.frontends.pytorch.lowering_utils import operand, out0, same_value, tensor_arg
from solar.frontends.pytorch.registry import LowerCtx, OpCall
from solar.ir import Access, Assign, DType, Expr, If, IntLit, Reduce, Stmt

__all__ = ["is_mask_index", "lower_mask_index", "lower_mask_index_put"]


def is_mask_index(indices: Sequence[object]) -> bool:
    """True when some index is a boolean tensor."""
    return any(isinstance(t, TensorInfo) and t.dtype == DType.BOOL for t in indices)


def lower_mask_index(ctx: LowerCtx, call: OpCall) -> None:
    """``x[..., mask, ...]`` by compaction (Note [Mask compaction]).

    Raises:
        UnsupportedOpError: a mask beside integer index tensors, or a mask whose shape
            is not that of the dims it indexes.
    """
    x, out = tensor_arg(call, 0, "self"), out0(call)
    k, mask = _the_mask(x, call.arg(1, "indices"))

    def copy(src: list[Expr], dst: list[Expr]) -> Stmt:
        return Assign(ctx.write(out, dst), cast(ctx.read(x, src), x.dtype, out.dtype))

    _compact(ctx, x, k, mask, copy)


def lower_mask_index_put(ctx: LowerCtx, call: OpCall, *, accumulate: bool) -> None:
    """``x[..., mask, ...] = values`` (``+=`` with ``accumulate``): the same walk, each
    set element taking the next slice of ``values`` (or its broadcast)."""
    x, out = tensor_arg(call, 0, "self"), out0(call)
    k, mask = _the_mask(x, call.arg(1, "indices"))
    values = call.arg(2, "values")
    rest = x.shape[k + mask.rank :]
    rshape = [*x.shape[:k], 1, *rest]
    if isinstance(values, TensorInfo) and values.rank >= len(rest) + 1:
        rshape[k] = values.shape[values.rank - len(rest) - 1]
    def put(src: list[Expr], dst: list[Expr]) -> Stmt:
        at = list(dst)
        if rshape[k] == 1:
            at[k] = IntLit(0)
        target = ctx.write(out, src)
        value = operand(values, at, rshape, out.dtype)
        return Reduce(target, "+", value) if accumulate else Assign(target, value)

    _compact(ctx, x, k, mask, put, copy_to=None if same_value(x, out) else out)


def _the_mask(x: TensorInfo, indices: Sequence[object]) -> tuple[int, TensorInfo]:
    given = [k for k, t in enumerate(indices) if t is not None]
    if len(given) != 1:
        raise UnsupportedOpError("a boolean mask beside other index tensors")
    k = given[0]
    mask = indices[k]
    assert isinstance(mask, TensorInfo)
    if tuple(x.shape[k : k + mask.rank]) != tuple(mask.shape):
        raise UnsupportedOpError("a boolean mask whose shape is not the indexed dims'")
    return k, mask


def _compact(
    ctx: LowerCtx,
    x: TensorInfo,
    k: int,
    mask: TensorInfo,
    move: Callable[[list[Expr], list[Expr]], Stmt],
    *,
    copy_to: TensorInfo | None = None,
) -> None:
    """One kernel: ``copy_to = x`` if given (a functional ``index_put``), then the mask
    walk calling ``move(x index, compacted index)`` for every slice element of each set
    mask element (Note [Mask compaction])."""
    kb = ctx.kernel()
    if copy_to is not None:
        c = ctx.vars(kb, x.rank, "c")
        kb.emit(*nest(list(zip(c, x.shape, strict=True)), [Assign(
            ctx.write(copy_to, list(c)), cast(ctx.read(x, list(c)), x.dtype, copy_to.dtype))]))
    r = mask.rank
    count = kb.local(DType.I64, [], "count").scalar()
    midx = ctx.vars(kb, r)
    before = ctx.vars(kb, k, "a")
    after = ctx.vars(kb, x.rank - k - r, "b")
    body = nest(
        [*zip(before, x.shape[:k], strict=True), *zip(after, x.shape[k + r :], strict=True)],
        [move([*before, *midx, *after], [*before, count, *after])],
    )
    step = Reduce(Access(count.tensor, ()), "+", IntLit(1))
    select = If(ctx.read(mask, list(midx)), (*body, step))
    kb.emit(Assign(count, IntLit(0)))
    kb.emit(*nest(list(zip(midx, mask.shape, strict=True)), [select], seq=True))

