"""Normalisation lowerings (ops_norm.py) against torch: batch, layer, group, RMS and weight
norm."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nn_opcheck import check_op, reduce_points

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = torch.ops.aten
_FAST = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _maybe(flag: bool, t: object) -> object:
    return t if flag else None


@_FAST
@given(
    st.lists(st.integers(1, 4), min_size=0, max_size=2),
    st.integers(1, 4),
    st.booleans(),
    st.booleans(),
)
def test_native_batch_norm(spatial: list[int], c: int, training: bool, affine: bool) -> None:
    n = 3 if training else 2
    x = torch.randn(n, c, *spatial) * 2 + 0.5
    rm, rv = torch.randn(c), torch.rand(c) + 0.5
    w, b = torch.rand(c) + 0.5, torch.randn(c)
    check_op(
        A.native_batch_norm.default,
        x,
        _maybe(affine, w),
        _maybe(affine, b),
        rm.clone() if not training or affine else None,
        rv.clone() if not training or affine else None,
        training,
        0.1,
        1e-5,
    )


@pytest.mark.parametrize(
    ("op", "args"),
    [
        (A._native_batch_norm_legit.default, (True, 0.2, 1e-3)),
        (A._native_batch_norm_legit_no_training.default, (0.2, 1e-3)),
        (A._native_batch_norm_legit_functional.default, (True, 0.3, 1e-3)),
        (A._native_batch_norm_legit.no_stats, None),
    ],
)
def test_batch_norm_variants(op: object, args: tuple[Any, ...] | None) -> None:
    x, w, b = torch.randn(4, 3, 5), torch.rand(3) + 0.5, torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    if args is None:
        check_op(op, x, w, b, True, 0.1, 1e-5)
    else:
        check_op(op, x, w, b, rm.clone(), rv.clone(), *args)


def test_cudnn_batch_norm_matches_native() -> None:
    # CUDA-only op: (out, save_mean, save_invstd, reserve) with the native op's values
    x, w, b = torch.randn(4, 3, 5), torch.rand(3) + 0.5, torch.randn(3)
    out, mean, rstd = A.native_batch_norm.default(x, w, b, None, None, True, 0.1, 1e-5)
    check_op(
        A.cudnn_batch_norm.default,
        x,
        w,
        b,
        None,
        None,
        True,
        0.1,
        1e-5,
        expected=(out, mean, rstd, torch.empty(0)),
    )


@_FAST
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3),
    st.integers(1, 2),
    st.booleans(),
    st.booleans(),
)
def test_native_layer_norm(shape: list[int], k: int, weight: bool, bias: bool) -> None:
    k = min(k, len(shape))
    x = torch.randn(*shape) * 3 + 1
    norm = shape[len(shape) - k :]
    check_op(
        A.native_layer_norm.default,
        x,
        norm,
        _maybe(weight, torch.randn(norm)),
        _maybe(bias, torch.randn(norm)),
        1e-5,
    )


@_FAST
@given(st.integers(1, 3), st.integers(1, 3), st.lists(st.integers(1, 4), max_size=2), st.booleans())
def test_native_group_norm(groups: int, cg: int, spatial: list[int], affine: bool) -> None:
    c = groups * cg
    # Note [one-pass variance] in ops_norm.py: groups of >= 4 elements keep f32 accurate
    spatial = [*spatial, 4]
    x = torch.randn(2, c, *spatial)
    hw = 1
    for d in spatial:
        hw *= d
    check_op(
        A.native_group_norm.default,
        x,
        _maybe(affine, torch.randn(c)),
        _maybe(affine, torch.randn(c)),
        2,
        c,
        hw,
        groups,
        1e-5,
    )


@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(eps: float | None) -> None:
    x = torch.randn(2, 3, 8)
    check_op(A.rms_norm.default, x, [8], torch.randn(8), eps)
    check_op(A._fused_rms_norm.default, x, [3, 8], None, eps)


def test_half_layer_norm() -> None:
    x = torch.randn(3, 16).half()
    check_op(
        A.native_layer_norm.default,
        x,
        [16],
        torch.randn(16).half(),
        None,
        1e-5,
        rtol=1e-2,
        atol=1e-2,
    )


@pytest.mark.parametrize(
    ("shape", "dim", "dtype"),
    [
        ((4, 3, 5), 0, torch.float32),
        ((4, 3, 5), 2, torch.float32),
        ((6, 8), 0, torch.float32),
        ((6, 8), 1, torch.float64),
        ((5,), 0, torch.float32),
        ((4, 2, 3, 3), 0, torch.bfloat16),
    ],
)
def test_weight_norm_interface(shape: tuple[int, ...], dim: int, dtype: torch.dtype) -> None:
    v = torch.randn(shape).to(dtype)
    keep = [n if d == dim % len(shape) else 1 for d, n in enumerate(shape)]
    g = (torch.rand(keep) + 0.5).to(dtype)
    tol = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {}
    program = check_op(A._weight_norm_interface.default, v, g, dim, **tol)
    # the norm reads every element once (v*v, 2 FLOPs) and the output scales each (1 FLOP)
    assert reduce_points(program) == v.numel()


@pytest.mark.parametrize("dim", [0, 1, 2, None])
def test_weight_norm_module_is_covered(dim: int | None) -> None:
    """dim 0 and the last reach the fused ``_weight_norm_interface``; others decompose."""
    import solar

    conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(4, 6, 3), dim=dim)
    report = solar.analyze(conv, (torch.randn(1, 4, 9),))
    assert report.coverage.complete, report.coverage.uncovered
    assert report.validation.status == "passed", report.validation.reason
