"""Constant parameters (solar.validate.constants): index patterns in the reference values
become index formulas the mask pass folds; any other value, or a zero-size one, stays."""

from __future__ import annotations

import numpy as np
import pytest

from solar.ir import (
    elide_masked_work,
    eliminate_dead_code,
    parse_program,
    print_program,
    verify_program,
)
from solar.validate import constant_params, execute_program


@pytest.mark.parametrize(("maker", "k"), [(np.tril, 0), (np.tril, 2), (np.triu, 1)])
def test_constant_buffers_become_index_formulas(maker: object, k: int) -> None:
    text = """solar-ir 1
program buf
input X : f32[4, 6, 6]
param mask : f32[1, 6, 6]
output Y : f32[4, 6, 6]
kernel mf { for b in 0 .. 4 { for i in 0 .. 6 { for j in 0 .. 6 {
  Y[b, i, j] = select(mask[0, i, j] == 0.0, -inf, X[b, i, j]) } } } }
"""
    p = parse_program(text)
    value = maker(np.ones((6, 6), dtype=np.float32), k)[None]  # type: ignore[operator]
    q = constant_params(p, {"mask": value})
    verify_program(q)
    assert [t.role for t in q.tensors if t.name == "mask"] == ["temp"]
    folded = eliminate_dead_code(elide_masked_work(q))
    assert "mask" not in print_program(folded)
    x = np.random.default_rng(0).standard_normal((4, 6, 6)).astype(np.float32)
    want = execute_program(p, {"X": x, "mask": value})["Y"]
    np.testing.assert_array_equal(execute_program(folded, {"X": x})["Y"], want)
    # a buffer without an index pattern stays a parameter
    noise = np.random.default_rng(1).random((1, 6, 6)).astype(np.float32)
    assert constant_params(p, {"mask": noise}) is p


@pytest.mark.parametrize("fill", [0.0, 1.0, -2.5])
def test_uniform_parameters_stay_parameters(fill: float) -> None:
    """Note [Uniform parameters]: a zero- or one-initialised weight is no mask; its matmul
    keeps its FLOPs and the program is unchanged."""
    text = """solar-ir 1
program lora
input X : f32[4, 6]
param B : f32[6, 6]
output Y : f32[4, 6]
kernel mm { for i in 0 .. 4 { for j in 0 .. 6 { Y[i, j] = 0.0
  for k in 0 .. 6 { Y[i, j] += X[i, k] * B[k, j] } } } }
"""
    p = parse_program(text)
    assert constant_params(p, {"B": np.full((6, 6), fill, dtype=np.float32)}) is p


@pytest.mark.parametrize(("values", "offset"), [(np.arange(6), 0), (np.arange(6) + 3, 3),
                                                (np.arange(6) - 2, -2), (np.ones(6), None),
                                                (np.arange(6)[::-1], None)])
def test_integer_ranges_become_index_formulas(values: np.ndarray, offset: int | None) -> None:
    """Note [Iota parameters]: an i32 ``arange(n) + c`` parameter compared with another is
    an affine guard; any other vector stays a parameter."""
    text = """solar-ir 1
program iota
input X : f32[6, 6]
param a : i32[6]
output Y : f32[6, 6]
kernel mf { for i in 0 .. 6 { for j in 0 .. 6 {
  Y[i, j] = select(a[j] <= a[i], X[i, j], 0.0) } } }
"""
    p = parse_program(text)
    value = values.astype(np.int32)
    q = constant_params(p, {"a": value})
    if offset is None:
        assert q is p
        return
    verify_program(q)
    folded = eliminate_dead_code(elide_masked_work(q))
    assert "a[" not in print_program(folded)
    assert "select(j <= i" in print_program(folded)
    x = np.random.default_rng(0).standard_normal((6, 6)).astype(np.float32)
    want = execute_program(p, {"X": x, "a": value})["Y"]
    np.testing.assert_array_equal(execute_program(folded, {"X": x})["Y"], want)


@pytest.mark.parametrize("shape", [(0,), (0, 4), (4, 0), (0, 0), (2, 0, 3), (0, 3, 3), (3, 3, 0)])
@pytest.mark.parametrize("dtype", ["f32", "bool", "i32"])
def test_zero_size_parameters_stay_parameters(shape: tuple[int, ...], dtype: str) -> None:
    """Issue 29 item 3: an empty constant (brax's pendulum) is no pattern, never a crash."""
    dims = ", ".join(str(s) for s in shape)
    p = parse_program(f"""solar-ir 1
program empty
input X : f32[2]
param c : {dtype}[{dims}]
output Y : f32[2]
kernel k {{ for i in 0 .. 2 {{ Y[i] = X[i] }} }}
""")
    np_dtype = {"f32": np.float32, "bool": np.bool_, "i32": np.int32}[dtype]
    assert constant_params(p, {"c": np.zeros(shape, dtype=np_dtype)}) is p
