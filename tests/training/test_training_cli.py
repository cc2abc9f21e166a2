"""``solar analyze --train`` end to end: text summary, golden JSON report, options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES

from solar.report import REPORT_SCHEMA_VERSION, Report

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

MLP_SGD = str(SAMPLES / "torch" / "train_mlp_sgd.py")


def _masked(report_json: str) -> str:
    """The report without what varies between machines (timing, version, paths, rounding)."""
    data = json.loads(report_json)
    data["tool"]["version"] = "<version>"
    data["input"]["path"] = Path(data["input"]["path"]).name
    v = data["validation"]
    v["wall_time_s"] = 0.0
    for out in v["outputs"]:
        out["max_abs_error"] = out["max_rel_error"] = "<masked>"
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def test_train_golden_report(capsys: pytest.CaptureFixture[str], golden: object) -> None:
    r = run_cli(capsys, "analyze", MLP_SGD, "--train", "--cache", "cold", "--format", "json")
    assert r.code == 0, r.err
    golden.check("training/train_mlp_sgd_report.json", _masked(r.out))  # type: ignore[attr-defined]
    report = Report.model_validate_json(r.out)
    assert report.schema_version == REPORT_SCHEMA_VERSION
    assert report.training is not None
    assert report.training.optimizer == "sgd(lr=0.001)"
    assert report.training.loss == "loss_fn of the model file"


def test_train_text_summary_shows_the_phases(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", MLP_SGD, "--train", "--optimizer", "adamw", "-q")
    assert r.code == 0, r.err
    assert "training step: loss loss_fn of the model file; optimizer adamw(lr=0.001" in r.out
    for phase in ("forward", "backward", "optimizer"):
        assert f"  {phase} " in r.out
    assert "saved activations" in r.out


def test_a_bad_optimizer_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", MLP_SGD, "--train", "--optimizer", "lamb")
    assert r.code == 2


def test_batch_bounds_training_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``solar batch --train --optimizer`` passes the step options to every file."""
    out = tmp_path / "out"
    r = run_cli(
        capsys, "batch", MLP_SGD, "--train", "--optimizer", "adamw", "--out", str(out),
        "--validate", "off", "--workers", "1",
    )  # fmt: skip
    assert r.code == 0, r.err
    (row,) = json.loads((out / "summary.json").read_text())
    report = Report.model_validate_json(Path(row["report"]).read_text())
    assert report.training is not None
    assert report.training.optimizer.startswith("adamw(")
