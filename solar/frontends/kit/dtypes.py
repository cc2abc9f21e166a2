"""Every dtype table the frontends share: framework names, precision classes, literals.

Contract: constant tables and pure helpers over `solar.ir.DType`; no torch, no jax.
torch and numpy/jax spell these dtypes the same way (``str(torch.float32)`` without its
``torch.`` prefix). Other dtypes (uint8 in torch, int16, complex, PRNG keys) are not in
the table: a frontend reports values of those dtypes as unrepresentable (the JAX
frontend additionally stores uint8 as int8 bits, see `solar.frontends.jaxfe.core`).

The accumulation rule is the one eager PyTorch, XLA and cuBLAS/cuDNN share: 16- and
8-bit floats accumulate in f32, every other dtype in itself. Both frontends, their
emitters and the LLM task builder read it from here, so a kernel that accumulates in
an f32 kernel-local under one framework does so under the other.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from solar.ir import Cast, DType, Expr, ReduceOp, lit

__all__ = [
    "FRAMEWORK_DTYPE_NAMES",
    "IR_DTYPES",
    "LOW_PRECISION",
    "NUMPY_WIDENED",
    "accumulate_dtype",
    "cast",
    "int_range",
    "one",
    "reduce_identity",
    "zero",
]

IR_DTYPES: Mapping[str, DType] = {
    "float64": DType.F64,
    "float32": DType.F32,
    "float16": DType.F16,
    "bfloat16": DType.BF16,
    "float8_e4m3fn": DType.F8E4M3,
    "float8_e5m2": DType.F8E5M2,
    "int64": DType.I64,
    "int32": DType.I32,
    "int8": DType.I8,
    "bool": DType.BOOL,
}
"""Framework dtype name -> IR dtype."""

FRAMEWORK_DTYPE_NAMES: Mapping[DType, str] = {d: name for name, d in IR_DTYPES.items()}
"""IR dtype -> framework dtype name (``getattr(torch, name)``, ``numpy.dtype(name)``)."""

NUMPY_WIDENED = frozenset({"bfloat16", "float8_e4m3fn", "float8_e5m2"})
"""Framework dtype names numpy has no native type for: reference arrays of these
dtypes are handed to the executor widened to float32."""

LOW_PRECISION = frozenset({DType.F16, DType.BF16, DType.F8E4M3, DType.F8E5M2})
"""The 16- and 8-bit floats, which kernels accumulate in f32."""

_INT_BITS = {DType.I8: 8, DType.I32: 32, DType.I64: 64}


def accumulate_dtype(dtype: DType) -> DType:
    """The type kernels accumulate in: f32 for 16/8-bit floats, else ``dtype``.

    >>> accumulate_dtype(DType.BF16), accumulate_dtype(DType.I32)
    (<DType.F32: 'f32'>, <DType.I32: 'i32'>)
    """
    return DType.F32 if dtype in LOW_PRECISION else dtype


def cast(expr: Expr, from_dtype: DType | None, to_dtype: DType) -> Expr:
    """``expr`` converted to ``to_dtype`` (no-op when the types already agree)."""
    if from_dtype == to_dtype:
        return expr
    return Cast(to_dtype, expr)


def zero(dtype: DType) -> Expr:
    """The literal 0 of ``dtype`` (``0.0``, ``0`` or ``false``).

    >>> from solar.ir import print_expr
    >>> [print_expr(zero(d)) for d in (DType.F16, DType.I8, DType.BOOL)]
    ['0.0', '0', 'false']
    """
    if dtype == DType.BOOL:
        return lit(False)
    return lit(0.0) if dtype.is_float else lit(0)


def one(dtype: DType) -> Expr:
    """The literal 1 of ``dtype`` (``1.0``, ``1`` or ``true``)."""
    if dtype == DType.BOOL:
        return lit(True)
    return lit(1.0) if dtype.is_float else lit(1)


def int_range(dtype: DType) -> tuple[int, int]:
    """The smallest and largest value of an integer dtype.

    >>> int_range(DType.I8)
    (-128, 127)
    """
    bits = _INT_BITS[dtype]
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def reduce_identity(op: ReduceOp, dtype: DType) -> Expr:
    """The identity of reduction ``op`` in ``dtype`` (what a reduction starts from).

    On bools ``max`` is ``or`` and ``min`` is ``and``.

    >>> from solar.ir import print_expr
    >>> print_expr(reduce_identity("max", DType.F32)), print_expr(reduce_identity("+", DType.I32))
    ('-inf', '0')
    >>> print_expr(reduce_identity("min", DType.I8)), print_expr(reduce_identity("*", DType.BOOL))
    ('127', 'true')
    """
    if op == "+":
        return zero(dtype)
    if op == "*":
        return one(dtype)
    if dtype == DType.BOOL:
        return lit(op == "min")
    if dtype.is_float:
        return lit(-math.inf) if op == "max" else lit(math.inf)
    lo, hi = int_range(dtype)
    return lit(lo) if op == "max" else lit(hi)
