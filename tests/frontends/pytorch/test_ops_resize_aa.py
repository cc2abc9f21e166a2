"""Antialiased resizes (ops_resize_aa.py) against torch: ``F.interpolate(...,
antialias=True)`` in bilinear and bicubic modes."""

from __future__ import annotations

from typing import Any

import pytest
from torch_check import check_program

from solar.einsum import lift_to_einsum

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.torch

RESIZES: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((3, 4), {"size": (3, 4)}),
    ((12, 5), {"size": (12, 5)}),
    ((8, 16), {"size": (8, 16)}),
    ((5, 9), {"size": (5, 9), "align_corners": True}),
    ((3, 2), {"size": (3, 2), "align_corners": True}),
    ((8, 9), {"size": (8, 9)}),
    ((4, 4), {"scale_factor": 0.5}),
    ((2, 6), {"scale_factor": (0.3, 0.7)}),
    ((20, 4), {"scale_factor": (2.5, 0.5), "recompute_scale_factor": True}),
    ((1, 1), {"size": (1, 1)}),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(("out", "kwargs"), RESIZES)
def test_antialias_matches_torch(mode: str, out: tuple[int, int], kwargs: dict[str, Any]) -> None:
    x = torch.randn(2, 3, 8, 9)
    assert F.interpolate(x, mode=mode, antialias=True, **kwargs).shape[2:] == out
    check_program(lambda t: F.interpolate(t, mode=mode, antialias=True, **kwargs), x)


def test_antialias_float64() -> None:
    x = torch.randn(1, 2, 8, 9, dtype=torch.float64)
    check_program(lambda t: F.interpolate(t, size=(3, 5), mode="bicubic", antialias=True), x)


@pytest.mark.parametrize(("mode", "taps", "per_tap"), [("bilinear", 14, 6), ("bicubic", 24, 8)])
def test_antialias_counts_only_real_taps(mode: str, taps: int, per_tap: int) -> None:
    """Note [Antialias taps]: 8 -> 4 per dim reads 3, 4, 4, 3 taps (bilinear, support 2)
    or 5, 7, 7, 5 (bicubic, support 4), not ``2 ceil(support) + 1`` = 5 or 9 per output.
    Each real tap costs a multiply-add per pass point. Its weight costs the filter
    argument (2), ``abs``, the filter's comparisons (1, or 3 for the cubic's two
    pieces), the total and the normalisation; each output coordinate's offset costs 6
    (``max(2 o - 1, 0)``, then ``- (2 o + 0.5)``). Eager spends more on both."""
    x = torch.randn(1, 2, 8, 8)
    lowered = check_program(lambda t: F.interpolate(t, size=(4, 4), mode=mode, antialias=True), x)
    flops = sum(node.flops.evaluate({}) for node in lift_to_einsum(lowered.program).nodes)
    first = 2 * (1 * 2 * 8) * taps  # one dim resized, the other still 8 long
    second = 2 * (1 * 2 * 4) * taps
    assert flops == first + second + 2 * (taps * per_tap + 4 * 6)
