"""ops_misc.py against torch: im2col (F.unfold), trace, cdist."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from torch_check import check_program

torch = pytest.importorskip("torch")
F = torch.nn.functional
pytestmark = pytest.mark.torch

CASES: dict[str, tuple[Callable[..., Any], tuple[tuple[int, ...], ...]]] = {
    "unfold": (lambda m: F.unfold(m, 2), ((2, 3, 5, 6),)),
    "unfold_padded_strided_dilated": (
        lambda m: F.unfold(m, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)),
        ((2, 3, 5, 6),),
    ),
    "unfold_unbatched": (lambda m: F.unfold(m, 2, padding=1), ((3, 4, 4),)),
    "trace_wide": (lambda x: torch.trace(x), ((4, 6),)),
    "trace_tall": (lambda x: torch.trace(x), ((6, 4),)),
    "cdist_p2": (lambda x, y: torch.cdist(x, y), ((4, 6), (5, 6))),
    "cdist_p1": (lambda x, y: torch.cdist(x, y, p=1.0), ((4, 6), (5, 6))),
    "cdist_p3": (lambda x, y: torch.cdist(x, y, p=3.0), ((4, 6), (5, 6))),
    "cdist_pinf": (lambda x, y: torch.cdist(x, y, p=float("inf")), ((4, 6), (5, 6))),
    "cdist_batched": (lambda x, y: torch.cdist(x, y), ((2, 3, 4), (2, 5, 4))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_lowering_matches_torch(name: str) -> None:
    fn, shapes = CASES[name]
    lowered = check_program(fn, *(torch.randn(*s) for s in shapes))
    assert lowered.coverage == ()
