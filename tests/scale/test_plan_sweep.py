"""``solar sweep --cluster --parallel``: one capture, every plan bounded, ranked by bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solar.batch.remote import ShippedFile
from solar.diagnostics import PlanError, UsageError
from solar.distributed import ParallelPlan
from solar.sweep.plans import PlanSweep, plan_grid, plan_points
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
BLOCK = ROOT / "samples" / "torch" / "train_transformer_block.py"


def test_grid_is_the_product_first_axis_slowest() -> None:
    plans = plan_grid(["tp=1,2", "pp=1..4:3", "zero=1"])
    assert plans == (ParallelPlan(tp=1, pp=1, zero=1), ParallelPlan(tp=1, pp=4, zero=1),
                     ParallelPlan(tp=2, pp=1, zero=1), ParallelPlan(tp=2, pp=4, zero=1))


def test_points_sweep_micro_batch_sizes_and_fan_out_round_robin() -> None:
    points = plan_points(["pp=2,4", "mb=1,2,4"])
    assert [(p.pp, mb) for p, mb in points] == [(2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4)]
    task = PlanSweep(ShippedFile.of(BLOCK), {}, "DGX_H100",
                     tuple(p.label() for p, _ in points), 1, 64, "none", "train", None, None,
                     micro_batches=tuple(mb for _, mb in points))
    parts = task.split(4)
    assert len(parts) == 4 and sum(len(t.plans) for t in parts) == 6
    assert parts[0].micro_batches == (1, 2) and parts[1].plans == (points[1][0].label(),
                                                                    points[5][0].label())
    assert len(task.split(100)) == 6 and len(task.split(1)) == 1
    with pytest.raises(UsageError):
        plan_grid(["mb=1,2"])  # a plan has no micro-batch size


@pytest.mark.parametrize(("axes", "error"), [
    (["tp=1,2", "tp=4"], UsageError),   # swept twice
    (["xx=1,2"], UsageError),           # unknown key
    (["tp"], UsageError),               # no values
    (["tp=a,b"], UsageError),           # not integers
    (["zero=5"], PlanError),            # no ZeRO stage 5
])
def test_bad_axes(axes: list[str], error: type[Exception]) -> None:
    with pytest.raises(error):
        plan_grid(axes)


def _sweep(capsys: pytest.CaptureFixture[str], tmp_path: Path, engine: str, workers: int,
           *args: str) -> list[dict[str, object]]:
    """Run a plan sweep on DGX_H100 (global batch 16); its ``plans.json`` rows."""
    pytest.importorskip("torch")
    if engine == "dask":
        pytest.importorskip("distributed")
    r = run_cli(capsys, "sweep", *args, "--train", "--cluster", "DGX_H100", "--global-batch",
                "16", "--out", str(tmp_path), "--engine", engine, "--workers", str(workers))
    assert r.code == 0, r.err
    assert f"{workers} task(s)" in r.err
    rows: list[dict[str, object]] = json.loads((tmp_path / "plans.json").read_text())
    return rows


@pytest.mark.torch
@pytest.mark.parametrize("engine", ["local", pytest.param("dask", marks=pytest.mark.slow)])
def test_plans_are_ranked_feasible_first(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         engine: str) -> None:
    rows = _sweep(capsys, tmp_path, engine, 1, str(BLOCK), "--parallel", "tp=1,2,8",
                  "--parallel", "dp=1,4", "--micro-batch", "2")
    assert [row["rank"] for row in rows] == list(range(1, 7))
    ok = [row for row in rows if row["status"] == "ok"]
    assert len(ok) == 4 and [row["step_s"] for row in ok] == sorted(row["step_s"] for row in ok)
    bad = [row for row in rows if row["status"] == "invalid"]
    assert {row["plan"] for row in bad} == {"tp=8,pp=1,dp=1", "tp=8,pp=1,dp=4"}
    assert all(row["error"].startswith("E0802") for row in bad)
    assert (tmp_path / "plans.csv").read_text().startswith("rank,plan,world,status,step_s")


@pytest.mark.torch
@pytest.mark.parametrize("engine", ["local", pytest.param("dask", marks=pytest.mark.slow)])
def test_schedules_and_micro_batches_fan_out(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                            engine: str) -> None:
    """Issue 27: schedules, virtual stages and micro-batch counts in one sweep, two tasks."""
    gpt = ROOT / "benchmarks" / "distributed" / "gpt.py"
    rows = _sweep(capsys, tmp_path, engine, 2, str(gpt), "--set", "LAYERS=4", "--set",
                  "HIDDEN=64", "--set", "HEADS=4", "--set", "SEQ=32", "--parallel", "pp=2",
                  "--parallel", "vpp=1,2", "--parallel", "mb=1,2", "--schedule", "1f1b,zbv")
    assert len(rows) == 4 * 2  # (vpp x mb) x schedules
    assert {(row["micro_batch"], row["micro_batches"]) for row in rows} == {(1, 16), (2, 8)}
    assert {row["schedule"] for row in rows} == {"1f1b", "zbv"}
    ok = [row for row in rows if row["status"] == "ok"]
    assert [row["step_s"] for row in ok] == sorted(row["step_s"] for row in ok)


def test_plan_sweep_needs_a_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    r = run_cli(capsys, "sweep", str(BLOCK), "--parallel", "tp=1,2", "--out", str(tmp_path))
    assert r.code == 2 and "error[E0806]" in r.err
