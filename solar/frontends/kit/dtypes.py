"""The framework dtype names the IR represents, and the dtype rules every lowering shares.

Contract: constant tables and pure helpers; no torch, no jax. torch and numpy/jax spell these dtypes
the same way (``str(torch.float32)`` without its ``torch.`` prefix). Other dtypes
(uint8 in torch, int16, complex, PRNG keys) are not in the table: a frontend reports
values of those dtypes as unrepresentable (the JAX frontend additionally stores uint8
as int8 bits, see `solar.frontends.jaxfe.core`).
"""

from __future__ import annotations

from collections.abc import Mapping

from solar.ir import Cast, DType, Expr, lit

__all__ = ["IR_DTYPES", "LOW_PRECISION", "accumulate_dtype", "cast", "zero"]

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

LOW_PRECISION: frozenset[DType] = frozenset({DType.F16, DType.BF16, DType.F8E4M3, DType.F8E5M2})
"""The 16- and 8-bit float dtypes: eager kernels and XLA accumulate them in f32."""


def accumulate_dtype(dtype: DType) -> DType:
    """The type contractions, convolutions and sums accumulate in: f32 for 16/8-bit
    floats (eager PyTorch kernels and XLA alike), else ``dtype`` itself.

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
    """The literal zero of ``dtype`` (``0.0``, ``0`` or ``false``).

    >>> from solar.ir import print_expr
    >>> print_expr(zero(DType.F16)), print_expr(zero(DType.I32)), print_expr(zero(DType.BOOL))
    ('0.0', '0', 'false')
    """
    if dtype == DType.BOOL:
        return lit(False)
    return lit(0.0) if dtype.is_float else lit(0)
