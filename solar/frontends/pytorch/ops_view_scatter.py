"""Lowerings of the view scatters: ``slice_scatter``, ``select_scatter`` and
``diagonal_scatter`` (functionalised ``x[..., a:b:s] = src``, ``x.select(d, i).copy_(src)``,
``x.diagonal(...).copy_(src)``).

Contract: one kernel per call that partitions the output: the elements of the view are
written from ``src``, every other element is copied from ``self``. Eager clones ``self``
and then overwrites the view, reading and writing the view's elements twice; the
partition reads ``self`` only where it survives, so each output element is written
exactly once and no byte is charged that the result does not need. A strided slice's
complement is the ranges before and after it plus the ``step - 1`` gaps between two
slice positions (a two-loop region ``start + q * step + r``); a diagonal's complement
is the two affine half-planes ``b < a + offset`` and ``b > a + offset``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit import Sink, TensorInfo, cast, iadd_const_last, imul_const_last, nest
from solar.frontends.pytorch.lowering_utils import binop, norm_dim, out0, same_value, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Expr, If, IntLit, Name, Stmt

__all__: list[str] = []

DimRange = tuple[int, int]
"""``[lo, hi)`` of one loop."""


def _copy_range(
    ctx: LowerCtx,
    kb: Sink,
    x: TensorInfo,
    out: TensorInfo,
    dim: int,
    ranges: Sequence[DimRange],
    position: Callable[[Sequence[Name]], Expr],
) -> None:
    """``out[.., p, ..] = self[.., p, ..]`` for ``p = position(vars)`` over ``ranges`` of
    dim ``dim`` (full loops elsewhere); nothing when some range is empty."""
    if any(hi <= lo for lo, hi in ranges) or same_value(x, out):
        return
    pos: list[Expr] = []
    loops: list[tuple[Name, int] | tuple[Name, int, int]] = []
    for k, n in enumerate(out.shape):
        if k == dim:
            inner = ctx.vars(kb, len(ranges), "q")
            pos.append(position(inner))
            loops += [(q, lo, hi) for q, (lo, hi) in zip(inner, ranges, strict=True)]
        else:
            (v,) = ctx.vars(kb, 1)
            pos.append(v)
            loops.append((v, n))
    stmt = Assign(ctx.write(out, pos), cast(ctx.read(x, pos), x.dtype, out.dtype))
    kb.emit(*nest(loops, [stmt]))


def _write_src(
    ctx: LowerCtx,
    kb: Sink,
    src: TensorInfo,
    out: TensorInfo,
    position: Callable[[Sequence[Name]], Sequence[Expr]],
) -> None:
    """``out[position(i)] = src[i]`` over ``src``'s shape."""
    if src.numel == 0:
        return
    idx = ctx.vars(kb, src.rank)
    stmt = Assign(ctx.write(out, position(idx)), cast(ctx.read(src, idx), src.dtype, out.dtype))
    kb.emit(*nest(list(zip(idx, src.shape, strict=True)), [stmt]))


def _clamp(v: int | None, n: int, default: int) -> int:
    if v is None:
        return default
    if v < 0:
        v += n
    return min(max(v, 0), n)


@LOWERINGS.register("aten.slice_scatter")
def _slice_scatter(ctx: LowerCtx, call: OpCall) -> None:
    """``slice_scatter(self, src, dim=0, start=None, end=None, step=1)``."""
    x, src, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "src"), out0(call)
    dim = norm_dim(call.arg(2, "dim", 0), x.rank)
    n = x.shape[dim]
    start = _clamp(call.arg(3, "start"), n, 0)
    step = int(call.arg(5, "step", 1) or 1)
    m = src.shape[dim]
    kb = ctx.kernel()
    last = start + (m - 1) * step if m else start - 1  # the last slice position
    _copy_range(ctx, kb, x, out, dim, [(0, start)], lambda q: q[0])
    _copy_range(
        ctx,
        kb,
        x,
        out,
        dim,
        [(0, m - 1), (1, step)],
        lambda q: iadd_const_last(iadd_const_last(imul_const_last(q[0], step), start), q[1]),
    )
    _copy_range(ctx, kb, x, out, dim, [(last + 1, n)], lambda q: q[0])

    def position(i: Sequence[Name]) -> list[Expr]:
        res: list[Expr] = list(i)
        res[dim] = iadd_const_last(imul_const_last(i[dim], step), start)
        return res

    _write_src(ctx, kb, src, out, position)


@LOWERINGS.register("aten.select_scatter")
def _select_scatter(ctx: LowerCtx, call: OpCall) -> None:
    """``select_scatter(self, src, dim, index)``."""
    x, src, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "src"), out0(call)
    dim = norm_dim(call.arg(2, "dim"), x.rank)
    n = x.shape[dim]
    index = int(call.arg(3, "index"))
    index = index + n if index < 0 else index
    kb = ctx.kernel()
    _copy_range(ctx, kb, x, out, dim, [(0, index)], lambda q: q[0])
    _copy_range(ctx, kb, x, out, dim, [(index + 1, n)], lambda q: q[0])
    _write_src(ctx, kb, src, out, lambda i: [*i[:dim], IntLit(index), *i[dim:]])


@LOWERINGS.register("aten.diagonal_scatter")
def _diagonal_scatter(ctx: LowerCtx, call: OpCall) -> None:
    """``diagonal_scatter(self, src, offset=0, dim1=0, dim2=1)``: ``src``'s last dim runs
    along the diagonal ``b - a == offset`` of dims ``(a, b) = (dim1, dim2)``."""
    x, src, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "src"), out0(call)
    offset = int(call.arg(2, "offset", 0))
    d1 = norm_dim(call.arg(3, "dim1", 0), x.rank)
    d2 = norm_dim(call.arg(4, "dim2", 1), x.rank)
    rest = [k for k in range(x.rank) if k not in (d1, d2)]
    kb = ctx.kernel()
    if not same_value(x, out) and out.numel:
        idx = ctx.vars(kb, out.rank)
        edge = iadd_const_last(idx[d1], offset)
        copy = Assign(ctx.write(out, idx), cast(ctx.read(x, idx), x.dtype, out.dtype))
        body: list[Stmt] = [
            If(binop("<", idx[d2], edge), (copy,)),
            If(binop(">", idx[d2], edge), (copy,)),
        ]
        kb.emit(*nest(list(zip(idx, out.shape, strict=True)), body))

    def position(i: Sequence[Name]) -> list[Expr]:
        res: list[Expr] = [IntLit(0)] * x.rank
        for pos, k in enumerate(rest):
            res[k] = i[pos]
        d = i[len(rest)]
        res[d1] = iadd_const_last(d, max(-offset, 0))
        res[d2] = iadd_const_last(d, max(offset, 0))
        return res

    _write_src(ctx, kb, src, out, position)
