"""Lowerings of elementwise primitives, conversions and aliases: one kernel each.

Contract: ``EqnCtx -> None`` (one kernel ``out[i...] = f(ins[i...])`` over the output
shape, numpy broadcasting of size-1 and rank-0 operands), or the input operands back
for aliases (``stop_gradient``, ``copy``, ``device_put``...; Note [Free views] in
`solar.frontends.jaxfe.core`). Equations whose inputs are all literals are folded to a
literal (XLA folds them too) instead of launching a kernel.

FLOPs follow docs/bounds.md: each operator or library call is 1 FLOP, so the same
computation written with ``jnp`` or ``torch`` ops costs the same. ``integer_pow`` by 2 is
``x * x`` (1 FLOP) and by larger exponents ``pow(x, n)`` (1 FLOP, a lower bound); lax's
away-from-zero ``round`` is ``sign(x) * floor(abs(x) + 0.5)``; ``is_finite`` is
``abs(x) < inf``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from solar.frontends.jaxfe.core import EqnOperand, Lit, bread
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import IndexMap, Nest, TensorInfo, UnsupportedOpError
from solar.ir import Access, Assign, Binary, Call, Cast, DType, Expr, Unary, lit

__all__ = ["emit_map"]

ExprFn = Callable[[Sequence[Expr]], Expr]


def emit_map(ctx: EqnCtx, fn: ExprFn, *, hint: str | None = None) -> None:
    """Emit ``out[idx] = fn(inputs at idx)`` as one kernel over the output shape."""
    shape = ctx.out_shape(0)
    out = ctx.out(0)
    kb = ctx.kernel(hint)
    nest = Nest(kb, shape)
    if nest.empty:
        return
    vals = [bread(x, nest.idx, shape) for x in ctx.ins]
    kb.emit(*nest.wrap([Assign(Access(out.ref.name, out.storage_index(nest.idx)), fn(vals))]))


def _call(name: str) -> ExprFn:
    return lambda a: Call(name, tuple(a))


def _bin(op: str) -> ExprFn:
    return lambda a: Binary(op, a[0], a[1])


_SIMPLE: dict[str, ExprFn] = {
    "add": _bin("+"),
    "add_any": _bin("+"),  # gradient accumulation (transpose of fan-out)
    "sub": _bin("-"),
    "mul": _bin("*"),
    "eq": _bin("=="),
    "ne": _bin("!="),
    "lt": _bin("<"),
    "le": _bin("<="),
    "gt": _bin(">"),
    "ge": _bin(">="),
    "max": _call("max"),
    "min": _call("min"),
    "pow": _call("pow"),
    "atan2": _call("atan2"),
    "neg": lambda a: Unary("-", a[0]),
    "abs": _call("abs"),
    "sign": _call("sign"),
    "floor": _call("floor"),
    "ceil": _call("ceil"),
    "exp": _call("exp"),
    "exp2": _call("exp2"),
    "log": _call("log"),
    "log1p": _call("log1p"),
    "expm1": _call("expm1"),
    "tanh": _call("tanh"),
    "logistic": _call("sigmoid"),
    "erf": _call("erf"),
    "sqrt": _call("sqrt"),
    "rsqrt": _call("rsqrt"),
    "sin": _call("sin"),
    "cos": _call("cos"),
    "tan": _call("tan"),
    "asin": _call("asin"),
    "acos": _call("acos"),
    "atan": _call("atan"),
    "square": lambda a: Binary("*", a[0], a[0]),
    "is_finite": lambda a: Binary("<", Call("abs", (a[0],)), lit(math.inf)),
    "erfc": lambda a: Binary("-", lit(1.0), Call("erf", (a[0],))),
    "cbrt": lambda a: Binary(
        "*", Call("sign", (a[0],)), Call("pow", (Call("abs", (a[0],)), lit(1.0 / 3.0)))
    ),
    "sinh": lambda a: Binary(
        "*", lit(0.5), Binary("-", Call("exp", (a[0],)), Call("exp", (Unary("-", a[0]),)))
    ),
    "cosh": lambda a: Binary(
        "*", lit(0.5), Binary("+", Call("exp", (a[0],)), Call("exp", (Unary("-", a[0]),)))
    ),
    # The IR has no inverse hyperbolic functions: their log forms.
    "asinh": lambda a: Binary(
        "*",
        Call("sign", (a[0],)),
        Call(
            "log",
            (
                Binary(
                    "+",
                    Call("abs", (a[0],)),
                    Call("sqrt", (Binary("+", Binary("*", a[0], a[0]), lit(1.0)),)),
                ),
            ),
        ),
    ),
    "acosh": lambda a: Call(
        "log", (Binary("+", a[0], Call("sqrt", (Binary("-", Binary("*", a[0], a[0]), lit(1.0)),))),)
    ),
    "atanh": lambda a: Binary(
        "*", lit(0.5), Binary("-", Call("log1p", (a[0],)), Call("log1p", (Unary("-", a[0]),)))
    ),
    # Total-order comparisons (sorting keys): the ordinary ones, equal off NaN and -0.0.
    "eq_to": _bin("=="),
    "le_to": _bin("<="),
    "lt_to": _bin("<"),
}

_FOLD: dict[str, Callable[..., object]] = {
    "add": np.add,
    "add_any": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
    "neg": np.negative,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "abs": np.abs,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
}


def _fold(ctx: EqnCtx, fn: Callable[..., object]) -> tuple[EqnOperand, ...] | None:
    """Fold an equation whose inputs are all literals; ``None`` if not foldable."""
    lits = [x for x in ctx.ins if isinstance(x, Lit)]
    if len(lits) != len(ctx.ins):
        return None
    dtype = ctx.out_dtype(0)
    with np.errstate(all="ignore"):
        value = np.asarray(fn(*[np.asarray(x.value) for x in lits]))
    py = value.item()
    return (Lit(_coerce(py, dtype), dtype, ctx.out_shape(0)),)


def _coerce(value: float | int | bool, dtype: DType) -> float | int | bool:
    """A folded numpy scalar's Python value as ``dtype`` holds it."""
    if dtype == DType.BOOL:
        return bool(value)
    if dtype.is_float:
        return float(value)
    return int(value)


def _simple(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    fold = _FOLD.get(ctx.prim)
    if fold is not None:
        folded = _fold(ctx, fold)
        if folded is not None:
            return folded
    same = _identity(ctx)
    if same is not None:
        return (same,)
    emit_map(ctx, _SIMPLE[ctx.prim])
    return None


_IDENTITY = {
    ("add", 0): 0,
    ("add", 1): 0,
    ("add_any", 0): 0,
    ("add_any", 1): 0,
    ("sub", 1): 0,
    ("mul", 0): 1,
    ("mul", 1): 1,
    ("div", 1): 1,
}


def _identity(ctx: EqnCtx) -> EqnOperand | None:
    """``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` are ``x`` (as XLA's simplifier folds them).

    Returns the other operand, as a free broadcast view when it is smaller than the result.
    """
    if len(ctx.ins) != 2 or ctx.out_dtype(0) == DType.BOOL:
        return None
    for k in (0, 1):
        unit = _IDENTITY.get((ctx.prim, k))
        lit_op, x = ctx.ins[k], ctx.ins[1 - k]
        if unit is None or not isinstance(lit_op, Lit) or not isinstance(x, TensorInfo):
            continue
        if float(lit_op.value) != unit or x.dtype != ctx.out_dtype(0):
            continue
        shape = ctx.out_shape(0)
        if x.shape == shape:
            return x
        return x.view(shape, _bcast_map(x.shape, shape))
    return None


def _bcast_map(shape: Sequence[int], out: Sequence[int]) -> IndexMap:
    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(_bcast_idx(shape, out, idx))

    return index_map


def _bcast_idx(shape: Sequence[int], out: Sequence[int], idx: Sequence[Expr]) -> list[Expr]:
    off = len(out) - len(shape)
    return [lit(0) if d == 1 and out[off + k] != 1 else idx[off + k] for k, d in enumerate(shape)]


LOWERINGS.register(*_SIMPLE)(_simple)


@LOWERINGS.register("div")
def _div(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    dtype = ctx.out_dtype(0)
    if dtype.is_float:
        folded = _fold(ctx, np.divide)
        if folded is not None:
            return folded
        same = _identity(ctx)
        if same is not None:
            return (same,)
        emit_map(ctx, _bin("/"))
        return None
    # lax.div on integers rounds toward zero.
    emit_map(ctx, lambda a: Cast(dtype, Call("trunc", (Binary("/", a[0], a[1]),))))
    return None


@LOWERINGS.register("rem")
def _rem(ctx: EqnCtx) -> None:
    emit_map(ctx, _call("fmod"))


@LOWERINGS.register("round")
def _round(ctx: EqnCtx) -> None:
    method = ctx.params.get("rounding_method", 0)
    if int(method) == 1:  # TO_NEAREST_EVEN
        emit_map(ctx, _call("round"))
        return
    emit_map(
        ctx,
        lambda a: Binary(
            "*",
            Call("sign", (a[0],)),
            Call("floor", (Binary("+", Call("abs", (a[0],)), lit(0.5)),)),
        ),
    )


@LOWERINGS.register("integer_pow")
def _integer_pow(ctx: EqnCtx) -> None:
    y = int(ctx.params["y"])
    dtype = ctx.out_dtype(0)

    def power(a: Sequence[Expr]) -> Expr:
        x = a[0]
        if y == 0:
            return lit(1.0) if dtype.is_float else lit(1)
        if y == 1:
            return x
        if y == 2:
            return Binary("*", x, x)
        if y == -1 and dtype.is_float:
            return Binary("/", lit(1.0), x)
        if dtype.is_float:
            return Call("pow", (x, lit(float(y))))
        if y < 0:
            raise UnsupportedOpError("integer_pow of an integer with a negative exponent")
        out = x
        for _ in range(y - 1):
            out = Binary("*", out, x)
        return out

    emit_map(ctx, power)


def _logical(op: str) -> Callable[[EqnCtx], None]:
    def lower(ctx: EqnCtx) -> None:
        if ctx.out_dtype(0) != DType.BOOL:
            raise UnsupportedOpError(f"bitwise `{ctx.prim}` on integers has no IR operator")
        if op == "not":
            emit_map(ctx, lambda a: Unary("not", a[0]))
        else:
            emit_map(ctx, _bin(op))

    return lower


LOWERINGS.register("and")(_logical("and"))
LOWERINGS.register("or")(_logical("or"))
LOWERINGS.register("xor")(_logical("!="))
LOWERINGS.register("not")(_logical("not"))


@LOWERINGS.register("select_n")
def _select_n(ctx: EqnCtx) -> None:
    pred_dtype = ctx.in_dtype(0)

    def choose(a: Sequence[Expr]) -> Expr:
        pred, cases = a[0], list(a[1:])
        if len(cases) == 1:
            return cases[0]
        if pred_dtype == DType.BOOL:
            return Call("select", (pred, cases[1], cases[0]))
        out = cases[-1]
        for k in range(len(cases) - 2, -1, -1):
            out = Call("select", (Binary("==", pred, lit(k)), cases[k], out))
        return out

    emit_map(ctx, choose)


@LOWERINGS.register("clamp")
def _clamp(ctx: EqnCtx) -> None:
    # clamp(lo, x, hi)
    emit_map(ctx, lambda a: Call("min", (Call("max", (a[1], a[0])), a[2])))


@LOWERINGS.register("convert_element_type")
def _convert(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    x = ctx.ins[0]
    dtype = ctx.out_dtype(0)
    # uint8 is stored as int8 bits (core.DTYPES): decode to 0..255 unless the bits are kept.
    unsigned = str(ctx.eqn.invars[0].aval.dtype) == "uint8" and dtype != DType.I8
    if isinstance(x, Lit):
        value = int(x.value) % 256 if unsigned else x.value
        return (Lit(_coerce(_convert_scalar(value, dtype), dtype), dtype, x.shape),)
    if x.dtype == dtype:
        return (x,)  # a weak-type change (or uint8 <-> int8, the same bits): no data moves
    if unsigned:
        emit_map(ctx, lambda a: Cast(dtype, Binary("%", a[0], lit(256))))
    else:
        emit_map(ctx, lambda a: Cast(dtype, a[0]))
    return None


def _convert_scalar(value: float | int | bool, dtype: DType) -> float | int | bool:
    if dtype == DType.BOOL:
        return bool(value)
    if dtype.is_float:
        return float(value)
    return int(value)  # truncation toward zero, as XLA converts


@LOWERINGS.register("reduce_precision")
def _reduce_precision(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    bits = (int(ctx.params["exponent_bits"]), int(ctx.params["mantissa_bits"]))
    target = {(5, 10): DType.F16, (8, 7): DType.BF16}.get(bits)
    if target is None or isinstance(ctx.ins[0], Lit):
        return (ctx.ins[0],)
    emit_map(ctx, lambda a: Cast(target, a[0]))
    return None


@LOWERINGS.register(
    "stop_gradient",
    "copy",
    "copy_p",
    "device_put",
    "optimization_barrier",
    "pvary",
    "sharding_constraint",
    "mesh_cast",
    "reshard",
)
def _alias(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    """Identity on values: no data moves in the program (docs/jax.md, views)."""
    n = len(ctx.eqn.outvars)
    return tuple(ctx.ins[:n])
