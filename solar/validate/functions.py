"""numpy implementations of IR functions and operators, and value-kind helpers.

Contract: pure element-wise helpers used by `solar.validate.evaluate`. Every IR
function of `solar.ir.FUNCTIONS` except ``select``, ``pow`` and ``fmod`` (which need
fault checks and live in the evaluator) maps to a callable over numpy arrays.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeAlias

import numpy as np

__all__ = [
    "ARITH",
    "ARITH_UFUNCS",
    "FUNCTION_IMPLS",
    "Value",
    "as_number",
    "is_zero",
    "kind_of",
    "promote",
]

Value: TypeAlias = np.ndarray | np.generic | int | float | bool


def _erf_fallback() -> Callable[[np.ndarray], np.ndarray]:
    scalar = np.frompyfunc(math.erf, 1, 1)

    def erf(x: np.ndarray) -> np.ndarray:
        arr = np.asarray(x)
        dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
        return np.asarray(scalar(arr), dtype=dtype)

    return erf


def _erf_impl() -> Callable[[np.ndarray], np.ndarray]:
    try:  # scipy is optional: exact and fast when present
        from scipy.special import erf
    except ImportError:  # pragma: no cover - depends on the environment
        return _erf_fallback()
    exact: Callable[[np.ndarray], np.ndarray] = erf  # scipy ships no types
    return exact


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _rsqrt(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / np.sqrt(x)
    return out


def _reciprocal(x: np.ndarray) -> np.ndarray:
    arr = np.asarray(x)
    return np.asarray(1.0 / arr if arr.dtype.kind == "f" else 1.0 / arr.astype(np.float64))


FUNCTION_IMPLS: dict[str, Callable[..., Value]] = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "erf": _erf_impl(),
    "abs": np.abs,
    "sign": np.sign,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.rint,
    "trunc": np.trunc,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "atan": np.arctan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "reciprocal": _reciprocal,
    "isnan": np.isnan,
    "atan2": np.arctan2,
    "min": np.minimum,
    "max": np.maximum,
}

ARITH: dict[str, Callable[[Value, Value], Value]] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}


ARITH_UFUNCS: dict[str, np.ufunc] = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.true_divide,
}


def kind_of(x: Value) -> str:
    """numpy's dtype kind of a value (``b``, ``i``, ``u``, ``f``)."""
    if isinstance(x, np.ndarray):
        return x.dtype.kind
    if isinstance(x, bool | np.bool_):
        return "b"
    if isinstance(x, int):
        return "i"
    if isinstance(x, float):
        return "f"
    return np.asarray(x).dtype.kind


def as_number(x: Value) -> Value:
    """Bools become int64 for arithmetic (numpy would treat ``+`` as ``or``)."""
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        return x.astype(np.int64)
    if isinstance(x, bool | np.bool_):
        return int(x)
    return x


def promote(a: Value, b: Value) -> tuple[Value, Value]:
    """Float array op int array keeps the float dtype (torch semantics), not float64."""
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return a, b
    ka, kb = a.dtype.kind, b.dtype.kind
    if ka == kb:
        return a, b
    if ka == "f" and kb in "iub":
        return a, b.astype(a.dtype)
    if kb == "f" and ka in "iub":
        return a.astype(b.dtype), b
    return a, b


def is_zero(x: Value) -> np.ndarray | bool:
    return np.asarray(x) == 0 if isinstance(x, np.ndarray) else x == 0
