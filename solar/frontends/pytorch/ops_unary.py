"""Lowerings of unary elementwise ops: math functions, casts and activations.

Contract: one kernel per call, ``out[idx] = f(x[idx])`` over the output shape. The
input is cast to the output type when the output is floating and the input is not
(``sqrt`` of an int tensor); formulas follow the eager kernels (``gelu`` exact and
tanh, ``softplus`` with ``beta``/``threshold``, ``elu`` with ``alpha``/``scale``/
``input_scale``...). Library functions count 1 FLOP each (docs/bounds.md), so each
formula is written with as few operations as eager uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from solar.frontends.kit import TensorInfo, UnsupportedOpError, cast
from solar.frontends.pytorch.lowering_utils import (
    binop,
    elementwise,
    fn,
    operand,
    out0,
    scalar_lit,
    sel,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import DType, Expr, Name, Unary, lit

__all__: list[str] = []

Body = Callable[[Expr], Expr]


def _compute_dtype(x: TensorInfo, out: TensorInfo) -> DType:
    if out.dtype == DType.BOOL:
        return x.dtype
    return out.dtype


def unary(ctx: LowerCtx, call: OpCall, body: Body, *, out: TensorInfo | None = None) -> None:
    """Emit ``out = body(x)`` with ``x`` the first argument in the compute type."""
    x = tensor_arg(call, 0, "self")
    out = out if out is not None else out0(call)
    dt = _compute_dtype(x, out)

    def value(idx: tuple[Name, ...]) -> Expr:
        return body(operand(x, idx, out.shape, dt))

    elementwise(ctx, out, value)


def _register(name: str, body: Body) -> None:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        unary(ctx, call, body)

    LOWERINGS.register(f"aten.{name}")(lower)


def _call(f: str) -> Body:
    return lambda x: fn(f, x)


for _f in (
    "sqrt",
    "rsqrt",
    "exp",
    "exp2",
    "log",
    "log2",
    "log1p",
    "expm1",
    "erf",
    "sin",
    "cos",
    "tan",
    "tanh",
    "sigmoid",
    "abs",
    "floor",
    "ceil",
    "trunc",
    "atan",
    "asin",
    "acos",
    "reciprocal",
    "isnan",
):
    _register(_f, _call(_f))

for _alias, _f in (
    ("fix", "trunc"),
    ("absolute", "abs"),
    ("arctan", "atan"),
    ("arcsin", "asin"),
    ("arccos", "acos"),
    ("special_expit", "sigmoid"),
    ("special_erf", "erf"),
    ("special_exp2", "exp2"),
    ("special_expm1", "expm1"),
    ("special_log1p", "log1p"),
):
    _register(_alias, _call(_f))

_register("neg", lambda x: Unary("-", x))
_register("negative", lambda x: Unary("-", x))
_register("square", lambda x: binop("*", x, x))
_register("frac", lambda x: binop("-", x, fn("trunc", x)))
_register("isinf", lambda x: binop("==", fn("abs", x), lit(math.inf)))
_register("isposinf", lambda x: binop("==", x, lit(math.inf)))
_register("isneginf", lambda x: binop("==", x, Unary("-", lit(math.inf))))
_register("isfinite", lambda x: binop("<", fn("abs", x), lit(math.inf)))
_register("relu", lambda x: fn("max", x, lit(0.0)))
_register("silu", lambda x: binop("*", x, fn("sigmoid", x)))
_register("mish", lambda x: binop("*", x, fn("tanh", fn("log1p", fn("exp", x)))))
_register(
    "hardsigmoid",
    lambda x: binop(
        "/", fn("min", fn("max", binop("+", x, lit(3.0)), lit(0.0)), lit(6.0)), lit(6.0)
    ),
)
_register(
    "hardswish",
    lambda x: binop(
        "*",
        x,
        binop("/", fn("min", fn("max", binop("+", x, lit(3.0)), lit(0.0)), lit(6.0)), lit(6.0)),
    ),
)
_register("tanhshrink", lambda x: binop("-", x, fn("tanh", x)))
_register("softsign", lambda x: binop("/", x, binop("+", lit(1.0), fn("abs", x))))


@LOWERINGS.register("aten.sign", "aten.sgn")
def _sign(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    if x.dtype == DType.BOOL:
        unary(ctx, call, lambda v: v)
        return
    unary(ctx, call, _call("sign"))


@LOWERINGS.register("aten.logical_not", "aten.bitwise_not")
def _not(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    if x.dtype == DType.BOOL:
        unary(ctx, call, lambda v: Unary("not", v))
    elif "logical" in call.target:
        unary(ctx, call, lambda v: binop("==", v, scalar_lit(0, x.dtype)))
    else:
        raise UnsupportedOpError("bitwise_not on integers")


@LOWERINGS.register("aten.round")
def _round(ctx: LowerCtx, call: OpCall) -> None:
    decimals = call.arg(1, "decimals", 0)
    if not decimals:
        unary(ctx, call, _call("round"))
        return
    k = lit(10.0**decimals)
    unary(ctx, call, lambda v: binop("/", fn("round", binop("*", v, k)), k))


@LOWERINGS.register("aten.relu6")
def _relu6(ctx: LowerCtx, call: OpCall) -> None:
    unary(ctx, call, lambda v: fn("min", fn("max", v, lit(0.0)), lit(6.0)))


@LOWERINGS.register("aten.hardtanh")
def _hardtanh(ctx: LowerCtx, call: OpCall) -> None:
    lo, hi = call.arg(1, "min_val", -1.0), call.arg(2, "max_val", 1.0)
    dt = out0(call).dtype
    unary(ctx, call, lambda v: fn("min", fn("max", v, scalar_lit(lo, dt)), scalar_lit(hi, dt)))


@LOWERINGS.register("aten.leaky_relu")
def _leaky_relu(ctx: LowerCtx, call: OpCall) -> None:
    slope = call.arg(1, "negative_slope", 0.01)
    unary(ctx, call, lambda v: sel(binop(">", v, lit(0.0)), v, binop("*", v, lit(float(slope)))))


@LOWERINGS.register("aten.rrelu_with_noise", "aten.rrelu")
def _rrelu_eval(ctx: LowerCtx, call: OpCall) -> None:
    pos = 3 if "noise" in call.target else 2
    lower = call.arg(pos - 1, "lower", 1.0 / 8.0)
    upper = call.arg(pos, "upper", 1.0 / 3.0)
    if call.arg(pos + 1, "training", False):
        raise UnsupportedOpError("rrelu in training mode draws random slopes")
    slope = (lower + upper) / 2
    unary(ctx, call, lambda v: sel(binop(">", v, lit(0.0)), v, binop("*", v, lit(slope))))


def _times(v: Expr, k: float) -> Expr:
    return v if k == 1 else binop("*", v, lit(float(k)))


@LOWERINGS.register("aten.elu")
def _elu(ctx: LowerCtx, call: OpCall) -> None:
    alpha = call.arg(1, "alpha", 1.0)
    scale = call.arg(2, "scale", 1.0)
    in_scale = call.arg(3, "input_scale", 1.0)
    unary(
        ctx,
        call,
        lambda v: sel(
            binop(">", v, lit(0.0)),
            _times(v, scale),
            _times(fn("expm1", _times(v, in_scale)), alpha * scale),
        ),
    )


@LOWERINGS.register("aten.selu")
def _selu(ctx: LowerCtx, call: OpCall) -> None:
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    unary(
        ctx,
        call,
        lambda v: sel(
            binop(">", v, lit(0.0)), _times(v, scale), _times(fn("expm1", v), alpha * scale)
        ),
    )


@LOWERINGS.register("aten.celu")
def _celu(ctx: LowerCtx, call: OpCall) -> None:
    alpha = call.arg(1, "alpha", 1.0)
    unary(
        ctx,
        call,
        lambda v: sel(
            binop(">", v, lit(0.0)), v, _times(fn("expm1", _times(v, 1.0 / alpha)), alpha)
        ),
    )


@LOWERINGS.register("aten.gelu")
def _gelu(ctx: LowerCtx, call: OpCall) -> None:
    approximate = call.arg(1, "approximate", "none")
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)

        def body(v: Expr) -> Expr:
            inner = binop(
                "*",
                lit(k),
                binop("+", v, binop("*", lit(0.044715), binop("*", v, binop("*", v, v)))),
            )
            return binop("*", binop("*", lit(0.5), v), binop("+", lit(1.0), fn("tanh", inner)))
    else:

        def body(v: Expr) -> Expr:
            return binop(
                "*",
                binop("*", lit(0.5), v),
                binop("+", lit(1.0), fn("erf", binop("*", v, lit(math.sqrt(0.5))))),
            )

    unary(ctx, call, body)


@LOWERINGS.register("aten.softplus")
def _softplus(ctx: LowerCtx, call: OpCall) -> None:
    beta = call.arg(1, "beta", 1.0)
    threshold = call.arg(2, "threshold", 20.0)

    def body(v: Expr) -> Expr:
        bx = _times(v, beta)
        soft = fn("log1p", fn("exp", bx))
        if beta != 1:
            soft = binop("/", soft, lit(float(beta)))
        return sel(binop(">", bx, lit(float(threshold))), v, soft)

    unary(ctx, call, body)


@LOWERINGS.register("aten.threshold")
def _threshold(ctx: LowerCtx, call: OpCall) -> None:
    th, val = call.arg(1, "threshold"), call.arg(2, "value")
    dt = out0(call).dtype
    unary(ctx, call, lambda v: sel(binop(">", v, scalar_lit(th, dt)), v, scalar_lit(val, dt)))


@LOWERINGS.register("aten.hardshrink")
def _hardshrink(ctx: LowerCtx, call: OpCall) -> None:
    lam = float(call.arg(1, "lambd", 0.5))
    unary(ctx, call, lambda v: sel(binop(">", fn("abs", v), lit(lam)), v, lit(0.0)))


@LOWERINGS.register("aten.softshrink")
def _softshrink(ctx: LowerCtx, call: OpCall) -> None:
    lam = float(call.arg(1, "lambd", 0.5))
    unary(
        ctx,
        call,
        lambda v: sel(
            binop(">", v, lit(lam)),
            binop("-", v, lit(lam)),
            sel(binop("<", v, Unary("-", lit(lam))), binop("+", v, lit(lam)), lit(0.0)),
        ),
    )


@LOWERINGS.register("aten.log_sigmoid_forward", "aten.log_sigmoid")
def _log_sigmoid(ctx: LowerCtx, call: OpCall) -> None:
    # The second output (``buffer``) is scratch for backward; CUDA leaves it empty,
    # so only the result is written (an unwritten temp is pruned by the driver).
    unary(
        ctx,
        call,
        lambda v: binop(
            "-", fn("min", v, lit(0.0)), fn("log1p", fn("exp", Unary("-", fn("abs", v))))
        ),
    )


@LOWERINGS.register("aten._prelu_kernel", "aten.prelu")
def _prelu(ctx: LowerCtx, call: OpCall) -> None:
    x, w = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "weight")
    out = out0(call)
    if "prelu.default" in call.target and w.rank == 1 and x.rank >= 2 and w.shape[0] > 1:
        wshape = (w.shape[0],) + (1,) * (x.rank - 2)
        from solar.frontends.pytorch.ops_movement import reshape_map_const_last

        w = w.view(wshape, reshape_map_const_last(w.shape, wshape))

    def value(idx: tuple[Name, ...]) -> Expr:
        v = operand(x, idx, out.shape, out.dtype)
        return sel(binop(">", v, lit(0.0)), v, binop("*", operand(w, idx, out.shape, out.dtype), v))

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.glu")
def _glu(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    out = out0(call)
    dim = call.arg(1, "dim", -1)
    dim = dim + x.rank if dim < 0 else dim
    half = x.shape[dim] // 2

    def value(idx: tuple[Name, ...]) -> Expr:
        a = cast(LowerCtx.read(x, idx), x.dtype, out.dtype)
        bidx: list[Expr] = list(idx)
        bidx[dim] = binop("+", idx[dim], lit(half))
        b = cast(LowerCtx.read(x, bidx), x.dtype, out.dtype)
        return binop("*", a, fn("sigmoid", b))

    elementwise(ctx, out, value)
