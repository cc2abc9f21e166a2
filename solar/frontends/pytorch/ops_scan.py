"""Lowerings of scans: cumsum, cumprod, logcumsumexp, cummax/cummin.

Contract: one kernel per call: a ``seq`` loop over the scanned dim (outermost, so the
other dims vectorise) carrying a kernel-local running value per row; each step
updates the carry and stores it. The carry lives in a local (registers on a GPU), so
the output is written once and never re-read. Reverse and exclusive scans as users
write them (``flip``/``cumsum``/``flip``, ``cumsum - x``, ``cat`` of a zero and a
slice) decompose into ops covered elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable

from solar.frontends.kit import TensorInfo, accumulate_dtype, cast, nest
from solar.frontends.pytorch.lowering_utils import binop, fn, norm_dim, out0, sel, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, DType, Expr, IntLit, Stmt, Unary

__all__: list[str] = []

Step = Callable[[Expr, Expr], Expr]
"""(carry, element) -> new carry."""


def _scan(
    ctx: LowerCtx,
    call: OpCall,
    step: Step,
    *,
    indices: TensorInfo | None = None,
    better: Callable[[Expr, Expr], Expr] | None = None,
) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    dim = norm_dim(call.arg(1, "dim"), x.rank)
    kb = ctx.kernel()
    if x.rank == 0:
        kb.emit(Assign(ctx.write(out, ()), cast(ctx.read(x, ()), x.dtype, out.dtype)))
        if indices is not None:
            kb.emit(Assign(ctx.write(indices, ()), IntLit(0)))
        return
    idx = ctx.vars(kb, x.rank)
    others = [k for k in range(x.rank) if k != dim]
    dt = accumulate_dtype(out.dtype)
    carry_ref = kb.local(dt, [x.shape[k] for k in others], "carry")
    carry = carry_ref[tuple(idx[k] for k in others)] if others else carry_ref.scalar()
    first: list[Expr] = list(idx)
    first[dim] = IntLit(0)
    elem0 = cast(ctx.read(x, first), x.dtype, dt)
    elem = cast(ctx.read(x, idx), x.dtype, dt)
    inner = [(idx[k], x.shape[k]) for k in others]

    def rows(stmts: list[Stmt]) -> list[Stmt]:
        return nest(inner, stmts)

    init: list[Stmt] = [Assign(carry, elem0), Assign(ctx.write(out, first), carry)]
    body: list[Stmt] = []
    if indices is not None and better is not None:
        pos_ref = kb.local(DType.I64, [x.shape[k] for k in others], "pos")
        pos = pos_ref[tuple(idx[k] for k in others)] if others else pos_ref.scalar()
        init += [Assign(pos, IntLit(0)), Assign(ctx.write(indices, first), pos)]
        body += [
            Assign(pos, sel(better(elem, carry), idx[dim], pos)),
            Assign(ctx.write(indices, idx), pos),
        ]
    body += [Assign(carry, step(carry, elem)), Assign(ctx.write(out, idx), carry)]
    kb.emit(*rows(init))
    if x.shape[dim] > 1:
        kb.emit(*nest([(idx[dim], 1, x.shape[dim])], rows(body), seq=True))


@LOWERINGS.register("aten.cumsum")
def _cumsum(ctx: LowerCtx, call: OpCall) -> None:
    _scan(ctx, call, lambda c, v: binop("+", c, v))


@LOWERINGS.register("aten.cumprod")
def _cumprod(ctx: LowerCtx, call: OpCall) -> None:
    _scan(ctx, call, lambda c, v: binop("*", c, v))


@LOWERINGS.register("aten.logcumsumexp")
def _logcumsumexp(ctx: LowerCtx, call: OpCall) -> None:
    def step(c: Expr, v: Expr) -> Expr:
        m = fn("max", c, v)
        return binop("+", m, fn("log1p", fn("exp", Unary("-", fn("abs", binop("-", c, v))))))

    _scan(ctx, call, step)


def _cum_extreme(op: str) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        indices = call.outputs[1] if len(call.outputs) > 1 else None
        # torch picks the latest index on ties (>= for max, <= for min)
        cmp = ">=" if op == "max" else "<="
        _scan(
            ctx,
            call,
            lambda c, v: fn(op, c, v),
            indices=indices,
            better=lambda v, c: binop(cmp, v, c),
        )

    return lower


LOWERINGS.register("aten.cummax")(_cum_extreme("max"))
LOWERINGS.register("aten.cummin")(_cum_extreme("min"))
