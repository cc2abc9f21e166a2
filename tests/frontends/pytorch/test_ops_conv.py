"""Convolution lowerings (ops_conv.py) against torch: random and awkward shapes, tap counts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nn_opcheck import check_op, reduce_points

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = torch.ops.aten
_FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def conv_cases(draw: st.DrawFn) -> dict[str, object]:
    nd = draw(st.integers(1, 3))
    small = nd == 3
    groups = draw(st.integers(1, 3))
    cg, kg = draw(st.integers(1, 2)), draw(st.integers(1, 3 if not small else 2))
    transposed = draw(st.booleans())
    ker = [draw(st.integers(1, 3)) for _ in range(nd)]
    stride = [draw(st.integers(1, 3)) for _ in range(nd)]
    dil = [draw(st.integers(1, 2)) for _ in range(nd)]
    pad = [draw(st.integers(0, 3)) for _ in range(nd)]
    size = [draw(st.integers(1, 4 if small else 7)) for _ in range(nd)]
    outpad = [draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dil, strict=True)]
    for k, s, d, p, n, op in zip(ker, stride, dil, pad, size, outpad, strict=True):
        if transposed:
            assume((n - 1) * s - 2 * p + d * (k - 1) + op + 1 >= 1)
        else:
            assume((n + 2 * p - d * (k - 1) - 1) // s + 1 >= 1)
    w_shape = (groups * cg, kg, *ker) if transposed else (groups * kg, cg, *ker)
    return {
        "x": torch.randn(draw(st.integers(1, 2)), groups * cg, *size),
        "w": torch.randn(w_shape),
        "b": torch.randn(groups * kg) if draw(st.booleans()) else None,
        "args": (stride, pad, dil, transposed, outpad if transposed else [0] * nd, groups),
    }


@_FAST
@given(conv_cases())
def test_convolution_matches_torch(case: dict[str, object]) -> None:
    check_op(A.convolution.default, case["x"], case["w"], case["b"], *case["args"])  # type: ignore[misc]


_AWKWARD = [
    # (input, weight, stride, padding, dilation, transposed, output_padding, groups)
    ((1, 4, 5, 5), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 4),  # depthwise
    ((2, 3, 4, 6), (6, 3, 1, 1), [1, 1], [0, 0], [1, 1], False, [0, 0], 1),  # 1x1
    ((1, 2, 3, 3), (3, 2, 2, 2), [1, 1], [3, 2], [1, 1], False, [0, 0], 1),  # padding > kernel
    ((1, 2, 7, 1), (2, 2, 3, 1), [2, 1], [1, 0], [3, 1], False, [0, 0], 1),  # size-1 dim
    ((1, 4, 3, 4), (4, 2, 3, 3), [2, 2], [2, 1], [1, 2], True, [1, 1], 2),  # grouped transposed
    ((2, 2, 1, 1), (2, 3, 4, 4), [3, 3], [0, 0], [1, 1], True, [2, 2], 1),  # 1x1 input, big stride
]


@pytest.mark.parametrize("case", _AWKWARD)
def test_awkward_convolutions(case: tuple[Any, ...]) -> None:
    xs, ws, *args = case
    bias = torch.randn(ws[1] * args[-1] if args[3] else ws[0])
    check_op(A.convolution.default, torch.randn(xs), torch.randn(ws), bias, *args)


@pytest.mark.parametrize("transposed", [False, True])
def test_padded_taps_do_not_execute(transposed: bool) -> None:
    # Only real taps run: the reduction count equals the number of multiply-adds torch
    # performs, i.e. the sum of the convolution of all-ones tensors.
    x = torch.ones(1, 2, 5, 4)
    w = torch.ones(2, 3, 3, 3) if transposed else torch.ones(3, 2, 3, 3)
    args = ([2, 1], [2, 1], [1, 2], transposed, [1, 0] if transposed else [0, 0], 1)
    program = check_op(A.convolution.default, x, w, None, *args)
    macs = int(A.convolution.default(x, w, None, *args).sum())
    assert reduce_points(program) == macs


def _overload_cases() -> list[tuple[Any, tuple[Any, ...], Any]]:
    x, b = torch.randn(1, 4, 6, 5), torch.randn(4)
    w_dw = torch.randn(4, 1, 3, 3)
    return [
        (A.conv2d.default, (x, torch.randn(4, 2, 3, 2), b, [1, 1], [1, 2], [1, 1], 2), None),
        (A.conv2d.padding, (x, torch.randn(4, 4, 3, 2), b, [1, 1], "same", [2, 1], 1), None),
        (A.conv1d.padding, (x[:, :, 0], torch.randn(4, 2, 4), b, [1], "same", [2], 2), None),
        (A.conv_transpose2d.input, (x, torch.randn(4, 4, 3, 2), b, [2, 1], [1, 0], [1, 0]), None),
        (
            A.mkldnn_convolution.default,
            (x, torch.randn(4, 4, 3, 3), b, [1, 0], [2, 1], [1, 1], 1),
            None,
        ),
        (
            A._slow_conv2d_forward.default,
            (x, torch.randn(4, 4, 3, 2), [3, 2], b, [2, 1], [1, 0]),
            None,
        ),
        (
            A.slow_conv_dilated2d.default,
            (x, torch.randn(4, 4, 2, 2), [2, 2], b, [1, 2], [2, 1], [2, 1]),
            None,
        ),
        # CUDA-only: compared with the equivalent grouped convolution
        (
            A._conv_depthwise2d.default,
            (x, w_dw, [3, 3], b, [1, 1], [1, 1], [1, 2]),
            torch.nn.functional.conv2d(x, w_dw, b, 1, 1, [1, 2], groups=4),
        ),
    ]


@pytest.mark.parametrize("case", range(8))
def test_conv_overloads(case: int) -> None:
    op, args, expected = _overload_cases()[case]
    check_op(op, *args, expected=expected)


def test_half_precision_accumulates_in_f32() -> None:
    x, w = torch.randn(1, 3, 6, 6).half(), torch.randn(4, 3, 3, 3).half()
    program = check_op(
        A.convolution.default,
        x,
        w,
        None,
        [1, 1],
        [1, 1],
        [1, 1],
        False,
        [0, 0],
        1,
        rtol=1e-2,
        atol=1e-2,
    )
    assert any(d.dtype.value == "f32" for k in program.kernels for d in k.locals)
