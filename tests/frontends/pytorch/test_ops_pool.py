"""Pooling lowerings (ops_pool.py) against torch: max (with indices), avg, adaptive."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from nn_opcheck import check_op, reduce_points

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = torch.ops.aten
_FAST = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_MAX = {2: A.max_pool2d_with_indices.default, 3: A.max_pool3d_with_indices.default}
_AVG = {1: A.avg_pool1d.default, 2: A.avg_pool2d.default, 3: A.avg_pool3d.default}


@st.composite
def windows(draw: st.DrawFn, nd: int, dilated: bool) -> tuple[list[int], ...]:
    ker = [draw(st.integers(1, 3)) for _ in range(nd)]
    stride = [draw(st.integers(1, 3)) for _ in range(nd)]
    dil = [draw(st.integers(1, 2)) if dilated else 1 for _ in range(nd)]
    pad = [draw(st.integers(0, ((k - 1) * d + 1) // 2)) for k, d in zip(ker, dil, strict=True)]
    pad = [min(p, k // 2) for p, k in zip(pad, ker, strict=True)]
    size = [draw(st.integers(1, 4 if nd == 3 else 7)) for _ in range(nd)]
    for n, k, s, p, d in zip(size, ker, stride, pad, dil, strict=True):
        assume(n + 2 * p >= d * (k - 1) + 1)
        # every window needs a real tap (torch leaves all-padding windows unspecified)
        n_out = (n + 2 * p - d * (k - 1) - 1) // s + 1
        assume(all(any(0 <= o * s + r * d - p < n for r in range(k)) for o in range(n_out)))
    return size, ker, stride, pad, dil


@_FAST
@given(st.integers(2, 3).flatmap(lambda nd: windows(nd, True)), st.booleans())
def test_max_pool_with_indices(win: tuple[list[int], ...], ceil: bool) -> None:
    size, ker, stride, pad, dil = win
    x = torch.randn(2, 3, *size)
    check_op(_MAX[len(size)], x, ker, stride, pad, dil, ceil)


@_FAST
@given(
    st.integers(1, 3).flatmap(lambda nd: windows(nd, False)),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, 3]),
)
def test_avg_pool(win: tuple[list[int], ...], ceil: bool, incl: bool, div: int | None) -> None:
    size, ker, stride, pad, _ = win
    nd = len(size)
    x = torch.randn(2, 2, *size)
    extra = (div,) if nd > 1 else ()
    try:  # torch rejects some windows larger than the unpadded input
        _AVG[nd](x, ker, stride, pad, ceil, incl, *extra)
    except RuntimeError:
        assume(False)
    check_op(_AVG[nd], x, ker, stride, pad, ceil, incl, *extra)


def test_max_pool_first_maximum_wins() -> None:
    x = torch.zeros(1, 1, 4, 4)  # every window ties: the index is the first tap in bounds
    check_op(A.max_pool2d_with_indices.default, x, [3, 3], [1, 1], [1, 1], [1, 1], False)


def test_unbatched_and_stride_default() -> None:
    check_op(A.max_pool2d_with_indices.default, torch.randn(3, 7, 6), [3], [], [1], [1], True)
    check_op(A.avg_pool2d.default, torch.randn(3, 7, 6), [2, 3], [])


def test_padded_taps_do_not_execute() -> None:
    x = torch.ones(1, 1, 5, 5)
    program = check_op(A.avg_pool2d.default, x, [3, 3], [2, 2], [1, 1], True, False)
    real_taps = int(A.avg_pool2d.default(x, [3, 3], [2, 2], [1, 1], True, True, 1).sum())
    assert reduce_points(program) == real_taps


@_FAST
@given(
    st.lists(st.integers(1, 7), min_size=1, max_size=3),
    st.lists(st.integers(1, 8), min_size=3, max_size=3),
)
def test_adaptive_pools(size: list[int], out: list[int]) -> None:
    nd = len(size)
    x = torch.randn(2, 2, *size)
    o = out[:nd]
    if nd == 1:
        check_op(A.adaptive_max_pool1d.default, x, o)
        check_op(A.adaptive_avg_pool1d.default, x, o)
        return
    avg = A._adaptive_avg_pool2d.default if nd == 2 else A._adaptive_avg_pool3d.default
    mx = A.adaptive_max_pool2d.default if nd == 2 else A.adaptive_max_pool3d.default
    check_op(avg, x, o)
    check_op(mx, x, o)


def test_adaptive_window_taps() -> None:
    # windows overlap when Out does not divide In: each output counts its own taps
    x = torch.ones(1, 1, 7, 5)
    program = check_op(A._adaptive_avg_pool2d.default, x, [3, 4])
    lo = [(o * 7) // 3 for o in range(3)]
    hi = [-((-(o + 1) * 7) // 3) for o in range(3)]
    lo_w = [(o * 5) // 4 for o in range(4)]
    hi_w = [-((-(o + 1) * 5) // 4) for o in range(4)]
    rows = [h - s for s, h in zip(lo, hi, strict=True)]
    cols = [h - s for s, h in zip(lo_w, hi_w, strict=True)]
    taps = sum(r * c for r in rows for c in cols)
    assert reduce_points(program) == taps
