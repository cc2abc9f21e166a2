"""Note [Diverging replay] (replay.py): a program that branches on being traced, whose
random draws are needed by call position, still validates end to end; a draw the real
run never makes is E0506 (validation skipped, with the reason)."""

from __future__ import annotations

import pytest

import solar

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _traced(x: object) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(x, FakeTensor) or getattr(x, "device", None) == torch.device("meta")


class _Branchy(torch.nn.Module):
    """Builds a mask one way when traced and another in eager (as transformers does),
    then draws dropout masks; ``skip_draw``: the eager branch draws one mask fewer."""

    def __init__(self, skip_draw: bool = False) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(0.25)
        self.skip_draw = skip_draw

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        traced = _traced(x)
        mask = (x > 0).float() if traced else torch.where(x > 0, 1.0, 0.0)
        h = self.drop(self.fc(x * mask))
        if traced or not self.skip_draw:
            h = self.drop(h)
        return torch.relu(self.fc(h))


@pytest.mark.parametrize("train", [False, True])
def test_draws_found_after_divergence(train: bool) -> None:
    torch.manual_seed(0)
    r = solar.analyze(_Branchy(), (torch.randn(4, 8),), train_mode=not train, train=train)
    assert r.coverage.complete
    assert r.validation.status == "passed", r.validation.reason
    assert "left the captured calls" in (r.validation.reason or "")


def test_missing_draw_is_e0506() -> None:
    torch.manual_seed(0)
    r = solar.analyze(_Branchy(skip_draw=True), (torch.randn(4, 8),), train_mode=True)
    assert r.validation.status == "skipped"
    assert "E0506" in (r.validation.reason or "")
    assert "never ran" in (r.validation.reason or "")
