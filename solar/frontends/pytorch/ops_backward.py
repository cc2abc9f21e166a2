"""Lowerings of the ATen backward ops a training step dispatches (docs/training.md).

Contract: ``(LowerCtx, OpCall) -> None``, as every op module. Elementwise backward ops
(``threshold_backward``, ``gelu_backward``, ``sigmoid_backward``...) are one loop nest
over the gradient; row-wise ones (``_softmax_backward_data``, ``native_layer_norm_
backward``) reduce a row into a kernel-local before writing it, like the forward
lowerings in ops_reduce.py and ops_norm.py; ops with several gradients
(normalisation: ops_backward_norm.py) compute every gradient ``output_mask`` asks for
in one launch (`OneKernel`), reading the operands once. Convolution, pooling and
indexing backward ops: ops_backward_spatial.py; attention: ops_backward_attention.py.
Formulas follow the eager CPU kernels with as few operations as they use (library
functions count 1 FLOP each, docs/bounds.md); a variant not written here raises
`UnsupportedOpError` and the op is reported uncovered with its share, never dropped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
)
from solar.frontends.pytorch.lowering_utils import (
    binop,
    elementwise,
    fn,
    norm_dim,
    operand,
    out0,
    scalar_lit,
    sel,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Binary, Expr, Name, Reduce, Stmt, Unary, lit

__all__ = ["OneKernel"]

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


def _opt(x: object) -> TensorInfo | None:
    return x if isinstance(x, TensorInfo) else None


class OneKernel(LowerCtx):
    """A `LowerCtx` whose every ``kernel()`` is the op's one kernel: an op with several
    gradients is one launch reading its operands once (the lower of the two counts)."""

    def __init__(self, ctx: LowerCtx) -> None:
        super().__init__(ctx.host, ctx.op)
        self.kernels = ctx.kernels
        if not self.kernels:
            super().kernel()

    def kernel(self, hint: str | None = None) -> Sink:
        """The op's kernel (``hint`` is ignored: it is named after the op)."""
        return self.kernels[0]


# ---------------------------------------------------------------------------- elementwise
def _grad_elementwise(
    ctx: LowerCtx, call: OpCall, body: Callable[[Expr, Expr], Expr], *, second: str = "self"
) -> None:
    """``out = body(grad, other)`` with ``other`` the second tensor argument."""
    g, other, out = tensor_arg(call, 0, "grad_output"), call.arg(1, second), out0(call)
    dt = accumulate_dtype(out.dtype)

    def value(idx: tuple[Name, ...]) -> Expr:
        v = body(operand(g, idx, out.shape, dt), operand(other, idx, out.shape, dt))
        return cast(v, dt, out.dtype)

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.threshold_backward")
def _threshold_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``threshold_backward(grad, self, threshold)``: ``grad`` where ``self > threshold``."""
    th = call.arg(2, "threshold")
    dt = accumulate_dtype(out0(call).dtype)
    _grad_elementwise(ctx, call, lambda g, x: sel(binop(">", x, scalar_lit(th, dt)), g, lit(0.0)))


@LOWERINGS.register("aten.sigmoid_backward")
def _sigmoid_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``sigmoid_backward(grad, output)``: ``g * y * (1 - y)``."""
    _grad_elementwise(
        ctx,
        call,
        lambda g, y: binop("*", binop("*", g, y), binop("-", lit(1.0), y)),
        second="output",
    )


@LOWERINGS.register("aten.tanh_backward")
def _tanh_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``tanh_backward(grad, output)``: ``g * (1 - y * y)``."""
    _grad_elementwise(
        ctx,
        call,
        lambda g, y: binop("*", g, binop("-", lit(1.0), binop("*", y, y))),
        second="output",
    )


@LOWERINGS.register("aten.silu_backward")
def _silu_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``silu_backward(grad, self)``: ``g * s * (1 + x * (1 - s))``, ``s = sigmoid(x)``."""
    g, x, out = tensor_arg(call, 0, "grad_output"), tensor_arg(call, 1, "self"), out0(call)
    dt = accumulate_dtype(out.dtype)
    kb = ctx.kernel()
    s = kb.local(dt, [], "s").scalar()
    full = Nest(kb, out.shape, "i")
    xv = operand(x, full.idx, out.shape, dt)
    val = binop(
        "*",
        binop("*", operand(g, full.idx, out.shape, dt), s),
        binop("+", lit(1.0), binop("*", xv, binop("-", lit(1.0), s))),
    )
    kb.emit(
        *full.wrap(
            [
                Assign(s, fn("sigmoid", xv)),
                Assign(ctx.write(out, full.idx), cast(val, dt, out.dtype)),
            ]
        )
    )


@LOWERINGS.register("aten.gelu_backward")
def _gelu_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``gelu_backward(grad, self, approximate)`` (exact erf or tanh form, as eager)."""
    g, x, out = tensor_arg(call, 0, "grad_output"), tensor_arg(call, 1, "self"), out0(call)
    approximate = call.arg(2, "approximate", "none")
    dt = accumulate_dtype(out.dtype)
    kb = ctx.kernel()
    full = Nest(kb, out.shape, "i")
    xv = operand(x, full.idx, out.shape, dt)
    gv = operand(g, full.idx, out.shape, dt)
    if approximate == "none":
        cdf = binop("*", lit(0.5), binop("+", lit(1.0), fn("erf", binop("*", xv, lit(_SQRT1_2)))))
        pdf = binop("*", fn("exp", binop("*", lit(-0.5), binop("*", xv, xv))), lit(_INV_SQRT_2PI))
        val = binop("*", gv, binop("+", cdf, binop("*", xv, pdf)))
        kb.emit(*full.wrap([Assign(ctx.write(out, full.idx), cast(val, dt, out.dtype))]))
        return
    if approximate != "tanh":
        raise UnsupportedOpError(f"gelu_backward approximate={approximate!r}")
    x2, t = kb.local(dt, [], "x2").scalar(), kb.local(dt, [], "t").scalar()
    inner = binop(
        "*", lit(_GELU_BETA), binop("*", xv, binop("+", lit(1.0), binop("*", lit(_GELU_KAPPA), x2)))
    )
    left_d = binop("*", lit(0.5), binop("+", lit(1.0), t))
    right_d = binop(
        "*",
        binop("*", binop("*", lit(0.5), xv), binop("-", lit(1.0), binop("*", t, t))),
        binop("*", lit(_GELU_BETA), binop("+", lit(1.0), binop("*", lit(3 * _GELU_KAPPA), x2))),
    )
    val = binop("*", gv, binop("+", left_d, right_d))
    kb.emit(
        *full.wrap(
            [
                Assign(x2, binop("*", xv, xv)),
                Assign(t, fn("tanh", inner)),
                Assign(ctx.write(out, full.idx), cast(val, dt, out.dtype)),
            ]
        )
    )


@LOWERINGS.register("aten.hardtanh_backward")
def _hardtanh_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``hardtanh_backward(grad, self, min, max)``: ``grad`` strictly inside the range."""
    lo, hi = float(call.arg(2, "min_val")), float(call.arg(3, "max_val"))
    _grad_elementwise(
        ctx,
        call,
        lambda g, x: sel(
            binop("<=", x, lit(lo)), lit(0.0), sel(binop(">=", x, lit(hi)), lit(0.0), g)
        ),
    )


@LOWERINGS.register("aten.leaky_relu_backward")
def _leaky_relu_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``leaky_relu_backward(grad, self, negative_slope, self_is_result)``."""
    slope = float(call.arg(2, "negative_slope"))
    _grad_elementwise(
        ctx, call, lambda g, x: sel(binop(">", x, lit(0.0)), g, binop("*", g, lit(slope)))
    )


@LOWERINGS.register("aten.hardswish_backward")
def _hardswish_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``hardswish_backward(grad, self)``: 0 up to -3, ``g (x / 3 + 1/2)`` below 3, else ``g``."""
    _grad_elementwise(
        ctx,
        call,
        lambda g, x: sel(
            binop("<=", x, lit(-3.0)),
            lit(0.0),
            sel(
                binop("<", x, lit(3.0)),
                binop("*", g, binop("+", binop("/", x, lit(3.0)), lit(0.5))),
                g,
            ),
        ),
    )


@LOWERINGS.register("aten.hardsigmoid_backward")
def _hardsigmoid_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``hardsigmoid_backward(grad, self)``: ``g / 6`` strictly inside (-3, 3), else 0."""
    _grad_elementwise(
        ctx,
        call,
        lambda g, x: sel(
            binop("and", binop(">", x, lit(-3.0)), binop("<", x, lit(3.0))),
            binop("/", g, lit(6.0)),
            lit(0.0),
        ),
    )


@LOWERINGS.register("aten.log_sigmoid_backward")
def _log_sigmoid_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``log_sigmoid_backward(grad, self, buffer)``: ``g * sigmoid(-x)``."""
    _grad_elementwise(ctx, call, lambda g, x: binop("*", g, fn("sigmoid", Unary("-", x))))


@LOWERINGS.register("aten.softplus_backward")
def _softplus_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``softplus_backward(grad, self, beta, threshold)``: ``g * sigmoid(beta x)`` below the
    threshold, ``g`` above (eager: ``z = exp(beta x)``, ``g z / (z + 1)``)."""
    beta, threshold = float(call.arg(2, "beta", 1.0)), float(call.arg(3, "threshold", 20.0))

    def body(g: Expr, x: Expr) -> Expr:
        bx = x if beta == 1.0 else binop("*", x, lit(beta))
        return sel(binop(">", bx, lit(threshold)), g, binop("*", g, fn("sigmoid", bx)))

    _grad_elementwise(ctx, call, body)


@LOWERINGS.register("aten.elu_backward")
def _elu_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``elu_backward(grad, alpha, scale, input_scale, is_result, self_or_result)``."""
    g, out = tensor_arg(call, 0, "grad_output"), out0(call)
    alpha, scale = float(call.arg(1, "alpha")), float(call.arg(2, "scale"))
    in_scale, is_result = float(call.arg(3, "input_scale")), bool(call.arg(4, "is_result"))
    v = tensor_arg(call, 5, "self_or_result")
    dt = accumulate_dtype(out.dtype)

    def value(idx: tuple[Name, ...]) -> Expr:
        gv, xv = operand(g, idx, out.shape, dt), operand(v, idx, out.shape, dt)
        if is_result:
            neg = binop("*", binop("*", gv, lit(in_scale)), binop("+", xv, lit(alpha * scale)))
        else:
            neg = binop(
                "*",
                gv,
                binop("*", lit(in_scale * alpha * scale), fn("exp", binop("*", xv, lit(in_scale)))),
            )
        pos = gv if scale == 1.0 else binop("*", gv, lit(scale))
        return cast(sel(binop("<=", xv, lit(0.0)), neg, pos), dt, out.dtype)

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.native_dropout_backward")
def _dropout_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``native_dropout_backward(grad, mask, scale)``: ``grad * mask * scale``."""
    scale = float(call.arg(2, "scale"))
    _grad_elementwise(
        ctx, call, lambda g, m: binop("*", binop("*", g, m), lit(scale)), second="mask"
    )


@LOWERINGS.register("aten.mse_loss_backward")
def _mse_loss_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``mse_loss_backward(grad, self, target, reduction)``: ``2 (x - t) g`` (``/ numel``
    for the mean)."""
    g, x, t, out = (
        call.arg(0, "grad_output"),
        call.arg(1, "self"),
        call.arg(2, "target"),
        out0(call),
    )
    reduction = int(call.arg(3, "reduction", 1))
    dt = accumulate_dtype(out.dtype)
    norm = 2.0 / out.numel if reduction == 1 else 2.0

    def value(idx: tuple[Name, ...]) -> Expr:
        diff = binop("-", operand(x, idx, out.shape, dt), operand(t, idx, out.shape, dt))
        return cast(
            binop("*", binop("*", lit(norm), diff), operand(g, idx, out.shape, dt)), dt, out.dtype
        )

    elementwise(ctx, out, value)


# ---------------------------------------------------------------------------- row-wise
def _rows_nest(ctx: LowerCtx, shape: Sequence[int], dim: int) -> tuple[Nest, Nest, Nest]:
    """Kept dims outside; two passes over ``dim`` inside (reduce, then write)."""
    kb = ctx.kernel()
    kept = Nest(kb, [e for k, e in enumerate(shape) if k != dim], "i")
    return kept, Nest(kb, [shape[dim]], "j"), Nest(kb, [shape[dim]], "j")


def _at(kept: Nest, j: Expr, dim: int, rank: int) -> list[Expr]:
    idx = list(kept.idx)
    idx.insert(dim, j)
    return idx[:rank]


def _softmax_backward(log: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``_softmax_backward_data(grad, output, dim, input_dtype)``: ``y (g - sum(g y))``;
        log-softmax: ``g - exp(y) sum(g)``."""
        g, y, out = tensor_arg(call, 0, "grad_output"), tensor_arg(call, 1, "output"), out0(call)
        dim = norm_dim(call.arg(2, "dim"), out.rank)
        if out.rank == 0:
            raise UnsupportedOpError("softmax backward of a 0-d tensor")
        dt = accumulate_dtype(out.dtype)
        kept, red, full = _rows_nest(ctx, out.shape, dim)
        kb = ctx.kernels[-1]
        kept_shape = [e for k, e in enumerate(out.shape) if k != dim]
        s_ref = kb.local(dt, kept_shape, "s")
        s = s_ref[tuple(kept.idx)] if kept_shape else s_ref.scalar()

        def rd(t: TensorInfo, nst: Nest) -> Expr:
            return cast(ctx.read(t, _at(kept, nst.idx[0], dim, out.rank)), t.dtype, dt)

        if log:
            term = rd(g, red)
            val = binop("-", rd(g, full), binop("*", fn("exp", rd(y, full)), s))
        else:
            term = binop("*", rd(g, red), rd(y, red))
            val = binop("*", rd(y, full), binop("-", rd(g, full), s))
        body: list[Stmt] = [
            Assign(s, lit(0.0)),
            *red.wrap([Reduce(s, "+", term)]),
            *full.wrap(
                [
                    Assign(
                        ctx.write(out, _at(kept, full.idx[0], dim, out.rank)),
                        cast(val, dt, out.dtype),
                    )
                ]
            ),
        ]
        kb.emit(*kept.wrap(body))

    return lower


LOWERINGS.register("aten._softmax_backward_data")(_softmax_backward(False))
LOWERINGS.register("aten._log_softmax_backward_data")(_softmax_backward(True))


@LOWERINGS.register("aten.nll_loss_backward", "aten.nll_loss2d_backward")
def _nll_loss_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``nll_loss_backward(grad, self, target, weight, reduction, ignore_index, total_weight)``:
    ``-w[t] g (/ total_weight for the mean)`` at the target class, 0 elsewhere."""
    g, x, target = (
        tensor_arg(call, 0, "grad_output"),
        tensor_arg(call, 1, "self"),
        call.arg(2, "target"),
    )
    weight, reduction = _opt(call.arg(3, "weight")), int(call.arg(4, "reduction", 1))
    ignore, total = int(call.arg(5, "ignore_index", -100)), call.arg(6, "total_weight")
    out = out0(call)
    if not isinstance(target, TensorInfo) or x.rank not in (1, 2, 4):
        raise UnsupportedOpError("nll_loss_backward: input of rank 1, 2 or 4 expected")
    dt = accumulate_dtype(out.dtype)
    cdim = 0 if x.rank == 1 else 1

    def value(idx: tuple[Name, ...]) -> Expr:
        tidx = [i for k, i in enumerate(idx) if k != cdim]
        t = ctx.read(target, tidx)
        gv = cast(ctx.read(g, tidx if reduction == 0 else []), g.dtype, dt)
        w = cast(ctx.read(weight, [t]), weight.dtype, dt) if weight is not None else None
        val: Expr = binop("*", w, gv) if w is not None else gv
        if reduction == 1 and isinstance(total, TensorInfo):
            val = binop("/", val, cast(ctx.read(total, []), total.dtype, dt))
        cond = binop("==", idx[cdim], t)
        if 0 <= ignore < x.shape[cdim]:
            cond = binop("and", cond, binop("!=", t, lit(ignore)))
        return cast(sel(cond, Binary("-", lit(0.0), val), lit(0.0)), dt, out.dtype)

    elementwise(ctx, out, value)
