"""The framework dtype names the IR represents, shared by the tracers.

Contract: a constant table; no torch, no jax. torch and numpy/jax spell these dtypes
the same way (``str(torch.float32)`` without its ``torch.`` prefix). Other dtypes
(uint8 in torch, int16, complex, PRNG keys) are not in the table: a frontend reports
values of those dtypes as unrepresentable (the JAX frontend additionally stores uint8
as int8 bits, see `solar.frontends.jaxfe.core`).
"""

from __future__ import annotations

from collections.abc import Mapping

from solar.ir import DType

__all__ = ["IR_DTYPES"]

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
