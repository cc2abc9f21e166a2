"""Lowerings of more loss and activation backward ops (docs/training.md).

Contract: as ops_backward.py (one kernel per call, eager's CPU formulas; ``norm`` is
``1/numel`` for the mean reduction, else 1):

* ``huber_loss_backward``: ``norm g clamp(x - t, -delta, delta)``;
* ``smooth_l1_loss_backward``: ``norm g clamp((x - t) / beta, -1, 1)`` (``beta > 0``);
* ``soft_margin_loss_backward``: ``-norm g t z / (1 + z)``, ``z = exp(-t x)``;
* ``binary_cross_entropy_backward``: ``norm w g (x - t) / max(x (1 - x), 1e-12)``;
* ``glu_backward``: for ``x = [a, b]`` along ``dim``: ``da = g s``, ``db = g a s (1 - s)``,
  ``s = sigmoid(b)``; one nest over the halves writes both;
* ``_prelu_kernel_backward``: ``dx = x > 0 ? g : w g`` and ``dw = x > 0 ? 0 : x g``, one
  nest (``dw`` of the input's shape, as eager returns it);
* ``_cdist_backward`` (``p`` 1 or 2): ``x1``'s gradient, a sum over ``x2``'s rows.
"""

from __future__ import annotations

from solar.frontends.kit import (
    Nest,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    fmax,
    fmin,
    iadd,
    nest,
)
from solar.frontends.pytorch.lowering_utils import (
    binop,
    elementwise,
    fn,
    norm_dim,
    operand,
    out0,
    sel,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Expr, Name, Reduce, Unary, lit

__all__: list[str] = []

_BCE_EPS = 1e-12
"""Eager's ``EPSILON`` in ``binary_cross_entropy_backward``."""


def _norm(call: OpCall, reduction_pos: int, numel: int) -> float:
    return 1.0 / numel if int(call.arg(reduction_pos, "reduction", 1)) == 1 else 1.0


def _clamped_loss(ctx: LowerCtx, call: OpCall, lo_hi: float, scale: float) -> None:
    """``norm g clamp(scale (x - t), -lo_hi, lo_hi)``."""
    g, x, t, out = (
        call.arg(0, "grad_output"),
        call.arg(1, "self"),
        call.arg(2, "target"),
        out0(call),
    )
    norm = _norm(call, 3, out.numel)
    dt = accumulate_dtype(out.dtype)

    def value(idx: tuple[Name, ...]) -> Expr:
        diff = binop("-", operand(x, idx, out.shape, dt), operand(t, idx, out.shape, dt))
        if scale != 1.0:
            diff = binop("*", diff, lit(scale))
        clamped = fmin(fmax(diff, lit(-lo_hi)), lit(lo_hi))
        return cast(
            binop("*", binop("*", lit(norm), clamped), operand(g, idx, out.shape, dt)),
            dt,
            out.dtype,
        )

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.huber_loss_backward")
def _huber_loss_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``huber_loss_backward(grad, self, target, reduction, delta)``."""
    delta = float(call.arg(4, "delta", 1.0))
    _clamped_loss(ctx, call, delta, 1.0)


@LOWERINGS.register("aten.smooth_l1_loss_backward")
def _smooth_l1_loss_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``smooth_l1_loss_backward(grad, self, target, reduction, beta)``."""
    beta = float(call.arg(4, "beta", 1.0))
    if beta <= 0.0:
        raise UnsupportedOpError("smooth_l1_loss_backward with beta 0 (an L1 gradient)")
    _clamped_loss(ctx, call, 1.0, 1.0 / beta)


@LOWERINGS.register("aten.soft_margin_loss_backward")
def _soft_margin_loss_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``soft_margin_loss_backward(grad, self, target, reduction)``."""
    g, x, t, out = (
        call.arg(0, "grad_output"),
        call.arg(1, "self"),
        call.arg(2, "target"),
        out0(call),
    )
    norm = _norm(call, 3, out.numel)
    dt = accumulate_dtype(out.dtype)

    def value(idx: tuple[Name, ...]) -> Expr:
        tv = operand(t, idx, out.shape, dt)
        z = fn("exp", Unary("-", binop("*", tv, operand(x, idx, out.shape, dt))))
        frac = binop("/", binop("*", tv, z), binop("+", lit(1.0), z))
        scaled = binop("*", lit(-norm), binop("*", frac, operand(g, idx, out.shape, dt)))
        return cast(scaled, dt, out.dtype)

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.binary_cross_entropy_backward")
def _bce_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``binary_cross_entropy_backward(grad, self, target, weight, reduction)``."""
    g, x, t, out = (
        call.arg(0, "grad_output"),
        call.arg(1, "self"),
        call.arg(2, "target"),
        out0(call),
    )
    w = call.arg(3, "weight")
    norm = _norm(call, 4, out.numel)
    dt = accumulate_dtype(out.dtype)

    def value(idx: tuple[Name, ...]) -> Expr:
        xv = operand(x, idx, out.shape, dt)
        den = fmax(binop("*", binop("-", lit(1.0), xv), xv), lit(_BCE_EPS))
        v = binop("/", binop("-", xv, operand(t, idx, out.shape, dt)), den)
        v = binop("*", binop("*", lit(norm), v), operand(g, idx, out.shape, dt))
        if w is not None:
            v = binop("*", v, operand(w, idx, out.shape, dt))
        return cast(v, dt, out.dtype)

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.glu_backward")
def _glu_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``glu_backward(grad, self, dim)``: both halves' gradients in one nest."""
    g, x, out = tensor_arg(call, 0, "grad_output"), tensor_arg(call, 1, "self"), out0(call)
    dim = norm_dim(call.arg(2, "dim", -1), out.rank)
    half = out.shape[dim] // 2
    dt = accumulate_dtype(out.dtype)
    kb = ctx.kernel()
    loops = Nest(kb, g.shape, "i")
    idx = list(loops.idx)
    second = list(idx)
    second[dim] = iadd(idx[dim], half)
    s = kb.local(dt, [], "s").scalar()
    a = cast(ctx.read(x, idx), x.dtype, dt)
    gv = cast(ctx.read(g, idx), g.dtype, dt)
    da = binop("*", gv, s)
    db = binop("*", binop("*", da, a), binop("-", lit(1.0), s))
    kb.emit(
        *loops.wrap(
            [
                Assign(s, fn("sigmoid", cast(ctx.read(x, second), x.dtype, dt))),
                Assign(ctx.write(out, idx), cast(da, dt, out.dtype)),
                Assign(ctx.write(out, second), cast(db, dt, out.dtype)),
            ]
        )
    )


@LOWERINGS.register("aten._prelu_kernel_backward")
def _prelu_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``_prelu_kernel_backward(grad, self, weight) -> (dx, dw)``, both of the input's
    shape (autograd sums ``dw`` to the weight's): ``dx = x > 0 ? g : w g``,
    ``dw = x > 0 ? 0 : x g``."""
    g, x, w = tensor_arg(call, 0, "grad_output"), tensor_arg(call, 1, "self"), call.arg(2, "weight")
    dx, dw = [*call.outputs, None, None][:2]
    if dx is None:
        raise UnsupportedOpError("_prelu_kernel_backward without the input gradient")
    dt = accumulate_dtype(dx.dtype)

    def parts(idx: tuple[Name, ...]) -> tuple[Expr, Expr, Expr]:
        xv, gv = operand(x, idx, dx.shape, dt), operand(g, idx, dx.shape, dt)
        return binop(">", xv, lit(0.0)), xv, gv

    def grad_input(idx: tuple[Name, ...]) -> Expr:
        pos, _, gv = parts(idx)
        return cast(sel(pos, gv, binop("*", operand(w, idx, dx.shape, dt), gv)), dt, dx.dtype)

    def grad_weight(idx: tuple[Name, ...]) -> Expr:
        pos, xv, gv = parts(idx)
        assert dw is not None
        return cast(sel(pos, lit(0.0), binop("*", xv, gv)), dt, dw.dtype)

    extra = [(dw, grad_weight)] if dw is not None else []
    elementwise(ctx, dx, grad_input, extra_outputs=extra)


@LOWERINGS.register("aten._cdist_backward")
def _cdist_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``_cdist_backward(grad, x1, x2, p, cdist)``, the gradient of ``x1`` (eager calls it
    again with the operands swapped for ``x2``): ``sum_j g[i, j] (x1[i] - x2[j]) /
    cdist[i, j]`` for ``p = 2`` (0 where the distance is 0), ``sum_j g[i, j] sign(x1[i] -
    x2[j])`` for ``p = 1``."""
    g, x1, x2 = tensor_arg(call, 0, "grad"), tensor_arg(call, 1, "x1"), tensor_arg(call, 2, "x2")
    dist, out = tensor_arg(call, 4, "cdist"), out0(call)
    p = float(call.arg(3, "p"))
    if p not in (1.0, 2.0) or x1.rank != x2.rank or x1.rank < 2:
        raise UnsupportedOpError(f"_cdist_backward with p={p:g}")
    dt = accumulate_dtype(out.dtype)
    kb = ctx.kernel()
    rows = Nest(kb, out.shape, "i")
    (j,) = ctx.vars(kb, 1, "j")
    lead, i, m = list(rows.idx[:-2]), rows.idx[-2], rows.idx[-1]
    diff = binop(
        "-",
        cast(ctx.read(x1, [*lead, i, m]), x1.dtype, dt),
        cast(ctx.read(x2, [*lead, j, m]), x2.dtype, dt),
    )
    gv = cast(ctx.read(g, [*lead, i, j]), g.dtype, dt)
    if p == 2.0:
        d = cast(ctx.read(dist, [*lead, i, j]), dist.dtype, dt)
        term = sel(binop("==", d, lit(0.0)), lit(0.0), binop("/", binop("*", gv, diff), d))
    else:
        term = binop("*", gv, fn("sign", diff))
    acc = kb.local(dt, [], "acc").scalar()
    kb.emit(
        *rows.wrap(
            [
                Assign(acc, lit(0.0)),
                *nest([(j, x2.shape[-2])], [Reduce(acc, "+", term)]),
                Assign(ctx.write(out, rows.idx), cast(acc, dt, out.dtype)),
            ]
        )
    )
