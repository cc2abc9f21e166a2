"""Lowerings of binary/ternary elementwise ops: arithmetic, comparisons, logic, select.

Contract: one kernel per call, a loop nest over the output shape with one assignment
``out[idx] = f(operands at broadcast idx)``. Operands are cast to the compute type
(the output type for arithmetic, the promoted input type for comparisons); Python
scalars become literals. ``alpha`` (add/sub/rsub), ``rounding_mode`` (div) and
``value`` (addcmul/addcdiv) follow the ATen signatures. In-place variants reuse these
lowerings (the driver maps ``add_`` to ``add``).
"""

from __future__ import annotations

from collections.abc import Callable

from solar.frontends.kit import TensorInfo, UnsupportedOpError, cast
from solar.frontends.pytorch.lowering_utils import (
    ElementwiseArg,
    binop,
    elementwise,
    fn,
    operand,
    out0,
    promote,
    same_value,
    scalar_lit,
    sel,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, DType, Expr, If, Name, Unary, lit

__all__: list[str] = []

Combine = Callable[[Expr, Expr], Expr]


def _binary(
    ctx: LowerCtx,
    call: OpCall,
    a: ElementwiseArg,
    b: ElementwiseArg,
    combine: Combine,
    *,
    compare: bool = False,
) -> None:
    out = out0(call)
    dt = promote(a, b) if compare else out.dtype
    if dt == DType.BOOL and not compare and out.dtype != DType.BOOL:
        dt = out.dtype

    def value(idx: tuple[Name, ...]) -> Expr:
        return combine(operand(a, idx, out.shape, dt), operand(b, idx, out.shape, dt))

    elementwise(ctx, out, value)


def _alpha(call: OpCall, y: Expr, dtype: DType) -> Expr:
    alpha = call.arg(2, "alpha", 1)
    return y if alpha == 1 else binop("*", y, scalar_lit(alpha, dtype))


@LOWERINGS.register("aten.add")
def _add(ctx: LowerCtx, call: OpCall) -> None:
    dt = out0(call).dtype
    if dt == DType.BOOL:
        _binary(ctx, call, call.args[0], call.args[1], lambda x, y: binop("or", x, y))
        return
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: binop("+", x, _alpha(call, y, dt)))


@LOWERINGS.register("aten.sub")
def _sub(ctx: LowerCtx, call: OpCall) -> None:
    dt = out0(call).dtype
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: binop("-", x, _alpha(call, y, dt)))


@LOWERINGS.register("aten.rsub")
def _rsub(ctx: LowerCtx, call: OpCall) -> None:
    dt = out0(call).dtype
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: binop("-", y, _alpha(call, x, dt)))


@LOWERINGS.register("aten.mul", "aten.multiply")
def _mul(ctx: LowerCtx, call: OpCall) -> None:
    op = "and" if out0(call).dtype == DType.BOOL else "*"
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: binop(op, x, y))


def _divide(x: Expr, y: Expr, mode: str | None, dtype: DType) -> Expr:
    if mode is None:
        return binop("/", x, y)
    if mode == "floor":
        return binop("//", x, y) if not dtype.is_float else fn("floor", binop("/", x, y))
    if mode == "trunc":
        if dtype.is_float:
            return fn("trunc", binop("/", x, y))
        q = fn("trunc", binop("/", cast(x, dtype, DType.F64), cast(y, dtype, DType.F64)))
        return cast(q, DType.F64, dtype)
    raise UnsupportedOpError(f"rounding_mode {mode!r}")


@LOWERINGS.register("aten.div", "aten.divide", "aten.true_divide")
def _div(ctx: LowerCtx, call: OpCall) -> None:
    mode = call.arg(2, "rounding_mode")
    dt = out0(call).dtype
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: _divide(x, y, mode, dt))


@LOWERINGS.register("aten.floor_divide")
def _floor_divide(ctx: LowerCtx, call: OpCall) -> None:
    dt = out0(call).dtype
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: _divide(x, y, "floor", dt))


@LOWERINGS.register("aten.remainder")
def _remainder(ctx: LowerCtx, call: OpCall) -> None:
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: binop("%", x, y))


@LOWERINGS.register("aten.fmod")
def _fmod(ctx: LowerCtx, call: OpCall) -> None:
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: fn("fmod", x, y))


@LOWERINGS.register("aten.atan2", "aten.arctan2")
def _atan2(ctx: LowerCtx, call: OpCall) -> None:
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: fn("atan2", x, y))


@LOWERINGS.register("aten.maximum", "aten.fmax", "aten.max.other")
def _maximum(ctx: LowerCtx, call: OpCall) -> None:
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: fn("max", x, y))


@LOWERINGS.register("aten.minimum", "aten.fmin", "aten.min.other")
def _minimum(ctx: LowerCtx, call: OpCall) -> None:
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: fn("min", x, y))


@LOWERINGS.register("aten.hypot")
def _hypot(ctx: LowerCtx, call: OpCall) -> None:
    _binary(
        ctx,
        call,
        call.args[0],
        call.args[1],
        lambda x, y: fn("sqrt", binop("+", binop("*", x, x), binop("*", y, y))),
    )


@LOWERINGS.register("aten.logaddexp")
def _logaddexp(ctx: LowerCtx, call: OpCall) -> None:
    def combine(x: Expr, y: Expr) -> Expr:
        m = fn("max", x, y)
        return binop("+", m, fn("log1p", fn("exp", Unary("-", fn("abs", binop("-", x, y))))))

    _binary(ctx, call, call.args[0], call.args[1], combine)


@LOWERINGS.register("aten.pow")
def _pow(ctx: LowerCtx, call: OpCall) -> None:
    base, exp = call.args[0], call.arg(1, "exponent")
    if not isinstance(exp, TensorInfo):
        if exp == 1:
            _binary(ctx, call, base, 0, lambda x, _y: x)
            return
        if exp == 2:
            _binary(ctx, call, base, 0, lambda x, _y: binop("*", x, x))
            return
        if exp == 0.5:
            _binary(ctx, call, base, 0, lambda x, _y: fn("sqrt", x))
            return
    _binary(ctx, call, base, exp, lambda x, y: fn("pow", x, y))


def _cmp(op: str) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        _binary(ctx, call, call.args[0], call.args[1], lambda x, y: binop(op, x, y), compare=True)

    return lower


for _name, _op in (
    ("eq", "=="),
    ("ne", "!="),
    ("lt", "<"),
    ("le", "<="),
    ("gt", ">"),
    ("ge", ">="),
    ("less", "<"),
    ("less_equal", "<="),
    ("greater", ">"),
    ("greater_equal", ">="),
    ("not_equal", "!="),
):
    LOWERINGS.register(f"aten.{_name}")(_cmp(_op))


def _truth(x: Expr, dtype: DType) -> Expr:
    return x if dtype == DType.BOOL else binop("!=", x, scalar_lit(0, dtype))


def _logical(op: str) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        a, b = call.args[0], call.args[1]
        dt = promote(a, b)
        out = out0(call)
        if out.dtype != DType.BOOL:
            raise UnsupportedOpError(f"{call.target} with non-bool output")

        def value(idx: tuple[Name, ...]) -> Expr:
            x = _truth(operand(a, idx, out.shape, dt), dt)
            y = _truth(operand(b, idx, out.shape, dt), dt)
            return binop(op, x, y)

        elementwise(ctx, out, value)

    return lower


for _name, _op in (
    ("logical_and", "and"),
    ("logical_or", "or"),
    ("logical_xor", "!="),
    ("bitwise_and", "and"),
    ("bitwise_or", "or"),
    ("bitwise_xor", "!="),
):
    LOWERINGS.register(f"aten.{_name}")(_logical(_op))


@LOWERINGS.register("aten.where")
def _where(ctx: LowerCtx, call: OpCall) -> None:
    cond, a, b = call.args[0], call.arg(1, "self"), call.arg(2, "other")
    if a is None or b is None:
        raise UnsupportedOpError("where(cond) returns data-dependent indices")
    out = out0(call)

    def value(idx: tuple[Name, ...]) -> Expr:
        c = operand(cond, idx, out.shape)
        if isinstance(cond, TensorInfo) and cond.dtype != DType.BOOL:
            c = _truth(c, cond.dtype)
        return sel(c, operand(a, idx, out.shape, out.dtype), operand(b, idx, out.shape, out.dtype))

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.masked_fill")
def _masked_fill(ctx: LowerCtx, call: OpCall) -> None:
    x, mask, val = call.args[0], call.args[1], call.arg(2, "value")
    out = out0(call)
    if isinstance(x, TensorInfo) and same_value(x, out):
        # In place (masked_fill_): write only where the mask is set, as eager does.
        kb = ctx.kernel()
        idx = ctx.vars(kb, out.rank)
        from solar.frontends.kit import nest

        stmt = If(
            operand(mask, idx, out.shape),
            (Assign(ctx.write(out, idx), operand(val, idx, out.shape, out.dtype)),),
        )
        kb.emit(*nest(list(zip(idx, out.shape, strict=True)), [stmt]))
        return

    def value(idx: tuple[Name, ...]) -> Expr:
        return sel(
            operand(mask, idx, out.shape),
            operand(val, idx, out.shape, out.dtype),
            operand(x, idx, out.shape, out.dtype),
        )

    elementwise(ctx, out, value)


def _clamp_expr(x: Expr, lo: Expr | None, hi: Expr | None) -> Expr:
    if lo is not None:
        x = fn("max", x, lo)
    if hi is not None:
        x = fn("min", x, hi)
    return x


@LOWERINGS.register("aten.clamp", "aten.clip")
def _clamp(ctx: LowerCtx, call: OpCall) -> None:
    x, lo, hi = call.args[0], call.arg(1, "min"), call.arg(2, "max")
    out = out0(call)

    def value(idx: tuple[Name, ...]) -> Expr:
        lo_e = operand(lo, idx, out.shape, out.dtype) if lo is not None else None
        hi_e = operand(hi, idx, out.shape, out.dtype) if hi is not None else None
        return _clamp_expr(operand(x, idx, out.shape, out.dtype), lo_e, hi_e)

    elementwise(ctx, out, value)


@LOWERINGS.register("aten.clamp_min")
def _clamp_min(ctx: LowerCtx, call: OpCall) -> None:
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: fn("max", x, y))


@LOWERINGS.register("aten.clamp_max")
def _clamp_max(ctx: LowerCtx, call: OpCall) -> None:
    _binary(ctx, call, call.args[0], call.args[1], lambda x, y: fn("min", x, y))


@LOWERINGS.register("aten.lerp")
def _lerp(ctx: LowerCtx, call: OpCall) -> None:
    a, b, w = call.args[0], call.args[1], call.arg(2, "weight")
    out = out0(call)

    def value(idx: tuple[Name, ...]) -> Expr:
        x = operand(a, idx, out.shape, out.dtype)
        y = operand(b, idx, out.shape, out.dtype)
        return binop("+", x, binop("*", operand(w, idx, out.shape, out.dtype), binop("-", y, x)))

    elementwise(ctx, out, value)


def _addc(op: str) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        s, t1, t2 = call.args[0], call.args[1], call.args[2]
        v = call.arg(3, "value", 1)
        out = out0(call)

        def value(idx: tuple[Name, ...]) -> Expr:
            term = binop(
                op, operand(t1, idx, out.shape, out.dtype), operand(t2, idx, out.shape, out.dtype)
            )
            if v != 1:
                term = binop("*", scalar_lit(v, out.dtype), term)
            return binop("+", operand(s, idx, out.shape, out.dtype), term)

        elementwise(ctx, out, value)

    return lower


LOWERINGS.register("aten.addcmul")(_addc("*"))
LOWERINGS.register("aten.addcdiv")(_addc("/"))


@LOWERINGS.register("aten.nan_to_num")
def _nan_to_num(ctx: LowerCtx, call: OpCall) -> None:
    x = call.args[0]
    out = out0(call)
    if not out.dtype.is_float:
        _binary(ctx, call, x, 0, lambda v, _y: v)
        return
    big = {DType.F64: 1.7976931348623157e308, DType.F16: 65504.0, DType.BF16: 3.3895313892515355e38}
    fmax = big.get(out.dtype, 3.4028234663852886e38)
    nan = call.arg(1, "nan") or 0.0
    posinf = call.arg(2, "posinf")
    neginf = call.arg(3, "neginf")
    pos = lit(fmax if posinf is None else float(posinf))
    neg = lit(-fmax if neginf is None else float(neginf))

    def value(idx: tuple[Name, ...]) -> Expr:
        v = operand(x, idx, out.shape, out.dtype)
        inner = sel(
            binop("==", v, lit(float("inf"))),
            pos,
            sel(binop("==", v, Unary("-", lit(float("inf")))), neg, v),
        )
        return sel(fn("isnan", v), lit(float(nan)), inner)

    elementwise(ctx, out, value)
