"""``solar sweep --cluster --parallel``: one capture, every plan bounded, ranked by bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solar.diagnostics import PlanError, UsageError
from solar.distributed import ParallelPlan
from solar.sweep.plans import plan_grid
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
BLOCK = ROOT / "samples" / "torch" / "train_transformer_block.py"


def test_grid_is_the_product_first_axis_slowest() -> None:
    plans = plan_grid(["tp=1,2", "pp=1..4:3", "zero=1"])
    assert plans == (ParallelPlan(tp=1, pp=1, zero=1), ParallelPlan(tp=1, pp=4, zero=1),
                     ParallelPlan(tp=2, pp=1, zero=1), ParallelPlan(tp=2, pp=4, zero=1))


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


@pytest.mark.torch
@pytest.mark.parametrize("engine", ["local", pytest.param("dask", marks=pytest.mark.slow)])
def test_plans_are_ranked_feasible_first(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                         engine: str) -> None:
    pytest.importorskip("torch")
    if engine == "dask":
        pytest.importorskip("distributed")
    r = run_cli(capsys, "sweep", str(BLOCK), "--train", "--cluster", "DGX_H100",
                "--parallel", "tp=1,2,8", "--parallel", "dp=1,4", "--micro-batch", "2",
                "--global-batch", "16", "--out", str(tmp_path), "--engine", engine,
                "--workers", "1")
    assert r.code == 0, r.err
    rows = json.loads((tmp_path / "plans.json").read_text())
    assert [row["rank"] for row in rows] == list(range(1, 7))
    ok = [row for row in rows if row["status"] == "ok"]
    assert len(ok) == 4 and [row["step_s"] for row in ok] == sorted(row["step_s"] for row in ok)
    bad = [row for row in rows if row["status"] == "invalid"]
    assert {row["plan"] for row in bad} == {"tp=8,pp=1,dp=1", "tp=8,pp=1,dp=4"}
    assert all(row["error"].startswith("E0802") for row in bad)
    assert (tmp_path / "plans.csv").read_text().startswith("rank,plan,world,status,step_s")


def test_plan_sweep_needs_a_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    r = run_cli(capsys, "sweep", str(BLOCK), "--parallel", "tp=1,2", "--out", str(tmp_path))
    assert r.code == 2 and "error[E0806]" in r.err
