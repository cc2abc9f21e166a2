"""Note [One preparation path]: every command bounds the program `prepare_program` returns.

A model whose causal mask is a registered ``tril`` buffer (nanoGPT's ``bias``): its
values become an index formula, so the masked-out half of the scores is not charged. That
rewrite needs the real run's values; before it was part of preparation, only ``solar
analyze`` with validation applied it, and ``solar bounds``, ``solar sweep``,
``--validate off`` and the phases of ``--train`` bounded the dense program.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_cli

from solar.pipeline import AnalyzeOptions, analyze, lift_source
from solar.report import Report
from solar.sweep import SweepLimits, SweepSpec, run_sweep

pytestmark = pytest.mark.torch

MODEL = '''
import math

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(32, 96)
        self.register_buffer("bias", torch.tril(torch.ones(64, 64)).view(1, 1, 64, 64))

    def forward(self, x):
        q, k, v = self.qkv(x).split(32, dim=-1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(32))
        att = att.unsqueeze(1).masked_fill(self.bias[:, :, :64, :64] == 0, float("-inf"))
        return (torch.softmax(att, dim=-1) @ v.unsqueeze(1)).squeeze(1)


def get_inputs():
    return [torch.randn(2, 64, 32)]
'''

# the linear (2*64*32*96 per batch row), Q K^T and P V on the causal triangle (64*65/2
# pairs of 32), scale, mask and softmax: dense, Q K^T and P V would charge 64*64 pairs
DENSE_EXTRA = 2 * 2 * 2 * (64 * 64 - 64 * 65 // 2) * 32


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("masked") / "masked_attention.py"
    path.write_text(MODEL)
    return path


@pytest.fixture(scope="module")
def analysed(model: Path) -> Report:
    return analyze(model, AnalyzeOptions(archs=("H100_SXM",)))


def _times(report: Report) -> dict[str, float]:
    return {b.model: b.time_s for b in report.archs[0].bounds}


def test_analyze_folds_the_buffer_mask(analysed: Report) -> None:
    assert analysed.validation.status == "passed"
    assert any(n.startswith("constant buffers:") and "p_bias" in n
               for n in analysed.frontend.notes)


def test_preparation_and_validation_share_one_real_run(
    model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from solar.frontends.pytorch import loader

    real: list[str] = []
    build = loader._instantiate

    def counted(source: loader.ProgramSource, *, fake_mode: Any, real_fallback: bool) -> Any:
        if source.target is None and fake_mode is None:
            real.append(source.name)
        return build(source, fake_mode=fake_mode, real_fallback=real_fallback)

    monkeypatch.setattr(loader, "_instantiate", counted)
    report = analyze(model, AnalyzeOptions(archs=("H100_SXM",)))
    assert report.validation.status == "passed"
    assert len(real) == 1  # the buffer's values and the validation come from one run


def test_analyze_without_validation_bounds_the_same_program(
    model: Path, analysed: Report
) -> None:
    off = analyze(model, AnalyzeOptions(archs=("H100_SXM",), validate="off"))
    assert off.validation.status == "skipped"
    assert off.flops == analysed.flops
    assert _times(off) == _times(analysed)
    assert off.ir.sha256 == analysed.ir.sha256


def test_bounds_command_bounds_the_same_program(
    model: Path, analysed: Report, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "bounds", str(model), "--arch", "H100_SXM", "--format", "json", "-q")
    assert r.code == 0, r.err
    rows = json.loads(r.out)["archs"][0]["bounds"]
    # the JSON rounds to 9 significant digits
    assert {b["model"]: b["time_s"] for b in rows} == pytest.approx(_times(analysed), rel=1e-8)
    fused = next(b for b in rows if b["model"] == "fused")
    assert fused["flops"] == analysed.flops
    prepared = lift_source(model, AnalyzeOptions(validate="off"))
    assert any(n.startswith("constant buffers:") for n in prepared.notes)
    assert len(prepared.graph.kernels) == len(analysed.archs[0].kernels)


def test_sweep_bounds_the_same_program(model: Path, analysed: Report, tmp_path: Path) -> None:
    spec = SweepSpec(model, archs=("H100_SXM",), validate="off")
    summary = run_sweep(spec, tmp_path / "out", limits=SweepLimits(table="csv", reports=False))
    (row,) = summary.rows
    assert row["status"] == "ok", row
    assert row["flops"] == analysed.flops
    assert {m: row[f"{m}_s"] for m in _times(analysed)} == _times(analysed)


def test_training_phases_bound_the_same_program(model: Path, analysed: Report) -> None:
    step = analyze(model, AnalyzeOptions(archs=("H100_SXM",), train=True, train_step=True))
    assert step.training is not None
    phases = {p.phase: p for p in step.training.phases}
    # the phases split the step's own program: their work adds up to the step's
    assert sum(p.flops for p in phases.values()) == step.flops
    # the forward phase charges the triangle too (the loss adds a few FLOPs; the dense
    # forward would add DENSE_EXTRA)
    assert 0 <= phases["forward"].flops - analysed.flops < DENSE_EXTRA / 100
    assert any(n.startswith("constant buffers:") for n in step.frontend.notes)
