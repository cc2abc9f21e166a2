"""Upsampling lowerings (ops_resize.py) against torch: index tables must match exactly."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nn_opcheck import check_op

from solar.frontends.pytorch.ops_resize import fit_floor_div

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = torch.ops.aten
_FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SCALES = [None, 0.5, 0.7, 1.5, 1.7, 2.0, 2.5, 3.0, 1 / 3]


def _out(n_in: int, scale: float | None, n_out: int) -> int:
    return n_out if scale is None else max(1, math.floor(n_in * scale))


@_FAST
@given(st.integers(1, 8), st.integers(1, 16), st.sampled_from(_SCALES))
def test_nearest_1d(n_in: int, n_out: int, scale: float | None) -> None:
    x = torch.randn(1, 2, n_in)
    n = _out(n_in, scale, n_out)
    check_op(A.upsample_nearest1d.default, x, [n], scale)
    check_op(A._upsample_nearest_exact1d.default, x, [n], scale)


@_FAST
@given(st.integers(1, 8), st.integers(1, 16), st.sampled_from(_SCALES), st.booleans())
def test_linear_1d(n_in: int, n_out: int, scale: float | None, align: bool) -> None:
    x = torch.randn(1, 2, n_in)
    check_op(
        A.upsample_linear1d.default, x, [_out(n_in, scale, n_out)], align, None if align else scale
    )


@_FAST
@given(st.integers(1, 6), st.integers(1, 12), st.sampled_from(_SCALES), st.booleans())
def test_bicubic(n_in: int, n_out: int, scale: float | None, align: bool) -> None:
    x = torch.randn(1, 2, n_in, 3)
    check_op(
        A.upsample_bicubic2d.default,
        x,
        [_out(n_in, scale, n_out), 5],
        align,
        None if align else scale,
        None,
    )


@pytest.mark.parametrize("align", [False, True])
def test_bilinear_and_trilinear(align: bool) -> None:
    x = torch.randn(2, 2, 5, 6)
    check_op(A.upsample_bilinear2d.default, x, [10, 12], align, None, None)
    check_op(A.upsample_bilinear2d.default, x, [3, 13], align, None, None)
    check_op(A.upsample_trilinear3d.default, torch.randn(1, 2, 3, 4, 5), [6, 7, 3], align)


def test_nearest_2d_3d_and_vec() -> None:
    x = torch.randn(1, 2, 5, 6)
    check_op(A.upsample_nearest2d.default, x, [10, 12])
    check_op(A._upsample_nearest_exact2d.default, x, [7, 11])
    check_op(A.upsample_nearest3d.default, torch.randn(1, 1, 2, 3, 4), [4, 3, 9])
    check_op(A.upsample_nearest2d.vec, x, None, [1.5, 2.0])


def test_fit_floor_div_finds_exact_forms() -> None:
    values = [math.floor(o * 5 / 7) for o in range(20)]
    a, b, c = fit_floor_div(values, [Fraction(5, 7)])  # type: ignore[misc]
    assert all((a * o + b) // c == v for o, v in enumerate(values))
    assert fit_floor_div([0, 5, 1], [Fraction(1, 2)]) is None
