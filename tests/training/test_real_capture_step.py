"""``--train`` on a program whose capture needs real tensors (``nonzero``, as
torch_geometric's self-loop handling): the training step is analysed, not replaced by
the forward (the real-tensor fallback builds through the same `instantiate` as every
other build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

NONZERO = """
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x):
        keep = torch.nonzero(x[:, 0] > 0).squeeze(1)   # data-dependent: no fake capture
        return self.lin(x[keep]).relu()


def get_inputs():
    torch.manual_seed(0)
    return [torch.randn(32, 16)]
"""


@pytest.mark.parametrize("optimizer", ["auto", "adamw"])
def test_train_step_survives_the_real_tensor_fallback(tmp_path: Path, optimizer: str) -> None:
    src = tmp_path / "nonzero_model.py"
    src.write_text(NONZERO)
    r = analyze(src, AnalyzeOptions(train_step=True, optimizer=optimizer))  # type: ignore[arg-type]
    assert r.frontend.captured_with == "real tensors"
    assert r.training is not None
    phases = {p.phase for p in r.training.phases}
    assert phases == {"forward", "backward", "optimizer"}
    assert r.training.optimizer.startswith("sgd" if optimizer == "auto" else "adamw")
    assert r.validation.status == "passed", r.validation
    forward_only = analyze(src, AnalyzeOptions())
    assert r.flops > 1.5 * forward_only.flops
