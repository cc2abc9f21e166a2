"""Discontinuities in a training step: ReLU's kink flips in fp32, not in float64.

Issue 29, item 7: an MLP step whose fp32 comparison fails because numpy and torch sum
the first layer's pre-activations in different orders, so pre-activations within
rounding of 0 take the other side of ReLU (its backward's ``x > 0`` mask) and the
first layer's weight gradient differs in whole rows. Here every pre-activation sits on
the kink (the first layer's rows are projected off the inputs' span, so each is
rounding noise around 0): fp32 differs on most of the gradient, while in float64 the
same IR agrees with the model run in float64 (Note [Float64 re-check] in
solar/pipeline/validation.py), and its re-check runs smaller when the widened check
does not fit (Note [Float64 re-check size] in solar/frontends/pytorch/frontend.py).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze
from solar.report import ValidationInfo

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ON_THE_KINK = textwrap.dedent(
    """
    import torch
    from torch import nn

    BATCH, DIM, HIDDEN = {sizes}


    def _inputs():
        g = torch.Generator().manual_seed(1)
        return torch.randn(BATCH, DIM, generator=g)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(DIM, HIDDEN, bias=False)
            self.fc2 = nn.Linear(HIDDEN, DIM)
            x = _inputs().double()
            w = self.fc1.weight.detach().double()
            q, _ = torch.linalg.qr(x.T)  # an orthonormal basis of the inputs' span
            with torch.no_grad():  # every pre-activation is rounding noise around 0
                self.fc1.weight.copy_((w - (w @ q) @ q.T).float())

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))


    def get_inputs():
        return [_inputs()]


    def get_init_inputs():
        return []
    """
)


def _validation(tmp_path: Path, sizes: tuple[int, int, int]) -> ValidationInfo:
    path = tmp_path / "on_the_kink.py"
    path.write_text(ON_THE_KINK.format(sizes=", ".join(map(str, sizes))))
    return analyze(path, AnalyzeOptions(train_step=True, optimizer="sgd")).validation


def _flipped(v: ValidationInfo) -> int:
    """Elements of the first layer's weight gradient the fp32 check rejected."""
    assert v.fp32_check is not None
    found = re.search(r"`y1` \(\d+, \d+\): (\d+) of \d+ checked elements differ",
                      v.fp32_check.mismatch)
    assert found is not None, v.fp32_check.mismatch
    return int(found.group(1))


def test_kink_flips_fail_fp32_and_pass_in_float64(tmp_path: Path) -> None:
    v = _validation(tmp_path, (16, 1024, 256))
    assert v.status == "passed"
    assert v.dtype == "float64"
    assert v.strategy == "full"
    assert all(o.passed and o.rtol < 1e-6 for o in v.outputs)
    # whole rows of dW1 flip: a gradient row is one hidden unit's mask times the inputs
    assert _flipped(v) >= 1024
    assert v.fp32_check is not None
    assert "discontinuity" in v.fp32_check.not_accepted
    assert "smaller than the fp32 check" not in (v.reason or "")


def test_the_float64_recheck_runs_smaller_when_its_widened_check_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 224 MiB pool: the fp32 check (about 90 MiB) fits the executor's 112 MiB, the
    # program widened to f64 (about 143 MiB) does not, so the re-check is re-captured
    # at smaller size constants
    monkeypatch.setenv("SOLAR_VALIDATION_MEMORY", "224")
    v = _validation(tmp_path, (32, 1024, 1024))
    assert v.status == "passed"
    assert v.dtype == "float64"
    assert v.strategy == "reduced-sizes"
    assert v.sizes["DIM"] < 1024
    assert _flipped(v) > 0
    assert "smaller than the fp32 check (full, BATCH=32, DIM=1024, HIDDEN=1024)" in (
        v.reason or ""
    )
