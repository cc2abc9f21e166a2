"""Rounding emulation of narrow dtypes, checked against ml_dtypes when installed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.ir import DType, parse_program
from solar.validate import execute_program
from solar.validate.dtypes import round_to_dtype

SPECIAL = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    448.0,
    464.0,
    470.0,
    480.0,
    57344.0,
    61440.0,
    65504.0,
    65520.0,
    1e-9,
    -1e-9,
    2.0**-10,
    2.0**-17,
    3.0e38,
]


def _ml_dtype(dtype: DType) -> type:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    table: dict[DType, type] = {
        DType.BF16: ml_dtypes.bfloat16,
        DType.F8E4M3: ml_dtypes.float8_e4m3fn,
        DType.F8E5M2: ml_dtypes.float8_e5m2,
        DType.F16: np.float16,
    }
    return table[dtype]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


@pytest.mark.parametrize("dtype", [DType.BF16, DType.F8E4M3, DType.F8E5M2, DType.F16])
def test_rounding_matches_ml_dtypes_on_special_values(dtype: DType) -> None:
    x = np.array(SPECIAL + [-v for v in SPECIAL], dtype=np.float32)
    with np.errstate(over="ignore"):
        want = x.astype(_ml_dtype(dtype)).astype(np.float32)
    assert _same(round_to_dtype(x, dtype), want)


@pytest.mark.parametrize("dtype", [DType.BF16, DType.F8E4M3, DType.F8E5M2])
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=64))
def test_rounding_matches_ml_dtypes(dtype: DType, values: list[float]) -> None:
    x = np.array(values, dtype=np.float32)
    want = x.astype(_ml_dtype(dtype)).astype(np.float32)
    assert _same(round_to_dtype(x, dtype), want)


def test_rounding_is_idempotent_and_ties_to_even() -> None:
    x = np.array([1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8], dtype=np.float32)  # bf16 ties
    once = round_to_dtype(x, DType.BF16)
    assert once.tolist() == [1.0, 1.015625]
    assert _same(round_to_dtype(once, DType.BF16), once)


@pytest.mark.parametrize(
    ("dtype", "values", "expected"),
    [
        (DType.I8, [127.9, -129.0, 300.0], [127, 127, 44]),
        (DType.I32, [2.0**31, -1.5], [-(2**31), -1]),
        (DType.BOOL, [0.0, np.nan, -2.0], [False, True, True]),
    ],
)
def test_integer_and_bool_conversion(
    dtype: DType, values: list[float], expected: list[int]
) -> None:
    assert round_to_dtype(np.array(values), dtype).tolist() == expected


def test_cast_inside_expression_rounds() -> None:
    text = (
        "solar-ir 1\nprogram c\ninput X : f32[3]\noutput Y : f32[3]\nkernel k {\n"
        "  for i in 0 .. 3 {\n    Y[i] = f32(f8e4m3(X[i])) + f32(bf16(X[i]))\n  }\n}\n"
    )
    x = np.array([0.3, 1000.0, -1.0 / 3.0], dtype=np.float32)
    got = execute_program(parse_program(text), {"X": x})["Y"]
    want = round_to_dtype(x, DType.F8E4M3) + round_to_dtype(x, DType.BF16)
    assert _same(got, want)
    assert np.isnan(got[1])  # 1000 overflows f8e4m3 (no infinity)


def test_bf16_inputs_accepted_from_ml_dtypes() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    text = (
        "solar-ir 1\nprogram c\ninput X : bf16[2]\noutput Y : bf16[2]\nkernel k {\n"
        "  for i in 0 .. 2 {\n    Y[i] = X[i] * 3.0\n  }\n}\n"
    )
    x = np.array([1.0, 1.5], dtype=ml_dtypes.bfloat16)
    got = execute_program(parse_program(text), {"X": x})["Y"]
    assert got.dtype == np.float32
    assert got.tolist() == [3.0, 4.5]


@pytest.mark.parametrize(
    ("dtype", "value", "want"),
    [
        (DType.BF16, np.asarray(2.5), 2.5),
        (DType.I64, np.asarray(2.7), 2),
        (DType.I32, np.asarray(np.float32(-1.5)), -1),
        (DType.BOOL, np.asarray(3), True),
        (DType.F32, np.asarray(True), 1.0),
    ],
)
def test_zero_dim_values_stay_arrays(dtype: DType, value: np.ndarray, want: float) -> None:
    """numpy turns a 0-d array into a scalar in ufuncs and comparisons."""
    got = round_to_dtype(value, dtype)
    assert isinstance(got, np.ndarray)
    assert got.shape == ()
    assert got.item() == want


def test_zero_dim_bf16_input() -> None:
    """The executor marks inputs read-only: a 0-d bf16 input once became a scalar."""
    text = (
        "solar-ir 1\nprogram c\ninput X : bf16[]\noutput Y : f32[]\nkernel k {\n"
        "  Y[] = f32(X[]) * 2.0\n}\n"
    )
    out = execute_program(parse_program(text), {"X": np.asarray(1.5, dtype=np.float32)})["Y"]
    assert out.item() == 3.0
