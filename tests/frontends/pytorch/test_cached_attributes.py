"""A module whose forward caches tensors on itself (ultralytics' detection head keeps
``self.anchors`` and ``self.shape``): the meta/fake capture leaves the user's module as it
was, so the real runs (reference, measure) do not meet meta tensors."""

from __future__ import annotations

from typing import Any

import pytest

import solar

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


class _Caching(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.shape: Any = None

    def forward(self, x: Any) -> Any:
        if self.shape != x.shape:  # recompute the grid only when the input shape changes
            self.grid = torch.arange(x.shape[-1], dtype=x.dtype, device=x.device)
            self.shape = x.shape
        return self.lin(x) + self.grid


def test_state_a_capture_caches_is_undone_and_the_real_run_validates() -> None:
    model = _Caching()
    report = solar.analyze(model, (torch.randn(4, 8),))
    assert report.validation.status == "passed", report.validation
    assert model.grid.device.type == "cpu"  # what the real runs cached, not a meta tensor
