"""Storage and rounding of IR dtypes in numpy (Note [Executor dtypes]).

Contract: pure array helpers. Every IR dtype has a *storage* numpy dtype the executor
keeps tensors in and computes with, and a *rounding* function that maps any numeric
array onto the values representable in the IR dtype (returned in the storage dtype).

Note [Executor dtypes]
    numpy has no bf16 or fp8, and its float16 arithmetic is slow and not what GPU
    kernels do (they accumulate in float32). So:

    * ``f64`` is stored and computed as float64, ``f32`` as float32.
    * ``f16``, ``bf16``, ``f8e4m3`` and ``f8e5m2`` are stored as float32 holding values
      rounded to the narrow format; arithmetic on them is float32, and results are
      rounded (round-to-nearest-even) whenever they are stored into a tensor of that
      dtype and at every explicit cast. A reduction statement therefore accumulates
      in float32 and rounds once per statement execution, not after every addend.
    * ``i64``, ``i32`` and ``i8`` are stored and computed as int64; stores into
      ``i32``/``i8`` wrap around (two's complement), like a C cast.
    * ``bool`` is stored as numpy bool.
    * float to integer conversion truncates toward zero (NaN/inf give an unspecified
      integer, as in C); conversion to bool is ``x != 0`` (NaN is true).

    fp8 follows the OCP formats torch uses: ``f8e4m3`` is ``float8_e4m3fn`` (max 448,
    no infinity: overflow and infinities become NaN) and ``f8e5m2`` is IEEE-like (max
    57344, overflow rounds to infinity). ``ml_dtypes`` is not needed; the tests compare
    against it when it is installed.

    `output_array` converts a finished tensor to the numpy dtype handed back to callers:
    float16 for ``f16``, float32 for ``bf16``/fp8 (holding exactly representable
    values), the declared width for integers.
"""

from __future__ import annotations

import numpy as np

from solar.ir import DType

__all__ = [
    "FP8_FORMATS",
    "STORAGE_DTYPES",
    "Fp8Format",
    "output_array",
    "round_bf16",
    "round_fp8",
    "round_to_dtype",
    "storage_dtype",
]

STORAGE_DTYPES: dict[DType, np.dtype[np.generic]] = {
    DType.F64: np.dtype(np.float64),
    DType.F32: np.dtype(np.float32),
    DType.F16: np.dtype(np.float32),
    DType.BF16: np.dtype(np.float32),
    DType.F8E4M3: np.dtype(np.float32),
    DType.F8E5M2: np.dtype(np.float32),
    DType.I64: np.dtype(np.int64),
    DType.I32: np.dtype(np.int64),
    DType.I8: np.dtype(np.int64),
    DType.BOOL: np.dtype(np.bool_),
}

_OUTPUT_DTYPES: dict[DType, np.dtype[np.generic]] = {
    **STORAGE_DTYPES,
    DType.F16: np.dtype(np.float16),
    DType.I32: np.dtype(np.int32),
    DType.I8: np.dtype(np.int8),
}

_INT_WIDTH: dict[DType, type[np.signedinteger]] = {DType.I32: np.int32, DType.I8: np.int8}
_EXACT = frozenset({DType.F64, DType.F32, DType.I64, DType.BOOL})


class Fp8Format:
    """Parameters of an 8-bit float format (mantissa bits, min normal exponent, max)."""

    __slots__ = ("has_inf", "mantissa_bits", "max_finite", "min_exp")

    def __init__(self, mantissa_bits: int, min_exp: int, max_finite: float, has_inf: bool):
        self.mantissa_bits = mantissa_bits
        self.min_exp = min_exp
        self.max_finite = max_finite
        self.has_inf = has_inf


FP8_FORMATS: dict[DType, Fp8Format] = {
    DType.F8E4M3: Fp8Format(3, -6, 448.0, has_inf=False),
    DType.F8E5M2: Fp8Format(2, -14, 57344.0, has_inf=True),
}


def storage_dtype(dtype: DType) -> np.dtype[np.generic]:
    """The numpy dtype the executor stores ``dtype`` tensors in.

    >>> storage_dtype(DType.BF16)
    dtype('float32')
    """
    return STORAGE_DTYPES[dtype]


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (round-to-nearest-even), returned as float32.

    >>> round_bf16(np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8], dtype=np.float32)).tolist()
    [1.0, 1.015625]
    """
    x = np.array(x, dtype=np.float32, order="C", copy=None)
    bits = x.view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = ((bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)).view(np.float32)
    nan = np.isnan(x)
    if nan.any():
        rounded = np.where(nan, np.float32(np.nan), rounded)
    return rounded


def round_fp8(x: np.ndarray, fmt: Fp8Format) -> np.ndarray:
    """Round values to an fp8 grid (round-to-nearest-even), returned as float32.

    >>> round_fp8(np.array([0.3, 500.0, 1e-9]), FP8_FORMATS[DType.F8E4M3]).tolist()
    [0.3125, nan, 0.0]
    """
    v = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        _, exp = np.frexp(v)
        # frexp: v = f * 2**exp with 0.5 <= |f| < 1, so the leading bit is 2**(exp - 1).
        scale_exp = np.maximum(exp - 1, fmt.min_exp) - fmt.mantissa_bits
        rounded = np.ldexp(np.rint(np.ldexp(v, -scale_exp)), scale_exp)
        overflow = np.abs(rounded) > fmt.max_finite
        if fmt.has_inf:
            rounded = np.where(overflow, np.copysign(np.inf, v), rounded)
        else:
            rounded = np.where(overflow | np.isinf(v), np.nan, rounded)
    return rounded.astype(np.float32)


def round_to_dtype(value: np.ndarray | float | bool, dtype: DType) -> np.ndarray:
    """Convert ``value`` to the values of ``dtype``, in its storage dtype.

    Args:
        value: any numeric or bool array (or scalar).
        dtype: the IR dtype to round to.

    Returns:
        An array of ``storage_dtype(dtype)`` (a fresh array or ``value`` itself when
        nothing changes).

    >>> round_to_dtype(np.array([2.5, -1.7]), DType.I32).tolist()
    [2, -1]
    >>> round_to_dtype(np.array([70000.0]), DType.F16).tolist()
    [inf]
    >>> type(round_to_dtype(np.asarray(2.5), DType.BF16)).__name__  # 0-d stays an array
    'ndarray'
    """
    # numpy ufuncs and comparisons turn a 0-d array into a numpy scalar
    return np.asarray(_rounded(np.asarray(value), dtype))


def _rounded(arr: np.ndarray, dtype: DType) -> np.ndarray:
    store = STORAGE_DTYPES[dtype]
    if arr.dtype == store and dtype in _EXACT:
        return arr
    with np.errstate(all="ignore"):
        if dtype is DType.BOOL:
            return arr != 0 if arr.dtype != np.bool_ else arr
        if not dtype.is_float:
            if arr.dtype.kind == "f":
                arr = np.trunc(arr)
            out = arr.astype(np.int64, copy=False)
            if dtype in _INT_WIDTH:
                out = out.astype(_INT_WIDTH[dtype]).astype(np.int64)
            return out
        if dtype is DType.F64:
            return arr.astype(np.float64, copy=False)
        if dtype is DType.F32:
            return arr.astype(np.float32, copy=False)
        if dtype is DType.F16:
            return arr.astype(np.float16).astype(np.float32)
        if dtype is DType.BF16:
            # Round f64 inputs to f32 first: double rounding can differ from a direct
            # f64 -> bf16 rounding only at exact ties of the f32 value, which we accept.
            return round_bf16(arr.astype(np.float32))
        return round_fp8(arr, FP8_FORMATS[dtype]).astype(store, copy=False)


def output_array(stored: np.ndarray, dtype: DType, *, copy: bool = True) -> np.ndarray:
    """Convert a stored tensor to the array handed back to callers (see module note).

    Args:
        stored: the tensor in its storage dtype.
        dtype: its IR dtype.
        copy: copy even when the storage dtype is already the output dtype (pass
            ``False`` to hand over an array nobody else holds).

    >>> output_array(np.array([1.5], dtype=np.float32), DType.F16).dtype
    dtype('float16')
    """
    return stored.astype(_OUTPUT_DTYPES[dtype], copy=copy)
