"""Parsing and checking parallel plans: every bad input is a coded PlanError."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.diagnostics import PlanError
from solar.distributed import ParallelPlan, check_plan, load_plan_file, parse_parallel

GOOD = [
    ("tp=8,pp=8,dp=16", ParallelPlan(tp=8, pp=8, dp=16)),
    ("tp=8, pp=8, dp=16, zero=1", ParallelPlan(tp=8, pp=8, dp=16, zero=1)),
    ("tp=4,pp=2,world=64", ParallelPlan(tp=4, pp=2, dp=8)),
    ("tp=2,cp=2,dp=4,ep=2,vpp=3,sp=1", ParallelPlan(tp=2, cp=2, dp=4, ep=2, vpp=3, sp=True)),
]


@pytest.mark.parametrize(("text", "plan"), GOOD)
def test_parse(text: str, plan: ParallelPlan) -> None:
    parsed = parse_parallel(text)
    assert parsed == plan
    assert parse_parallel(parsed.label()) == parsed  # the label round-trips


BAD = [
    ("tp=8,xx=2", "E0804"),      # unknown key
    ("tp=eight", "E0804"),       # not an integer
    ("tp=0", "E0804"),           # not positive
    ("zero=4", "E0804"),         # no ZeRO stage 4
    ("tp=2,tp=4", "E0804"),      # given twice
    ("tp=8,world=12", "E0801"),  # world not a multiple of tp*cp*pp
    ("tp=8,dp=2,world=64", "E0801"),  # dp given and inconsistent
]


@pytest.mark.parametrize(("text", "code"), BAD)
def test_bad_parallel(text: str, code: str) -> None:
    with pytest.raises(PlanError) as err:
        parse_parallel(text)
    assert err.value.code == code
    assert err.value.exit_code == 2


CHECKS = [
    (dict(plan=ParallelPlan(tp=8, dp=16), max_gpus=72), "E0803"),
    (dict(plan=ParallelPlan(tp=16), heads=12), "E0802"),
    (dict(plan=ParallelPlan(tp=5), heads=12), "E0802"),
    (dict(plan=ParallelPlan(dp=4, ep=3)), "E0801"),
    (dict(plan=ParallelPlan(pp=8, vpp=2), layers=12), "E0801"),
    (dict(plan=ParallelPlan(dp=3), global_batch=16), "E0801"),
]


@pytest.mark.parametrize(("kwargs", "code"), CHECKS)
def test_check_plan_errors(kwargs: dict[str, object], code: str) -> None:
    args: dict[str, object] = dict(max_gpus=None, cluster="C", micro_batch=1, global_batch=48,
                                   heads=None, layers=None)
    args.update(kwargs)
    plan = args.pop("plan")
    assert isinstance(plan, ParallelPlan)
    with pytest.raises(PlanError) as err:
        check_plan(plan, **args)  # type: ignore[arg-type]
    assert err.value.code == code


def test_check_plan_returns_micro_batches_per_rank() -> None:
    plan = ParallelPlan(tp=8, pp=8, dp=16)
    assert check_plan(plan, max_gpus=None, cluster="C", micro_batch=1, global_batch=1536,
                      heads=96, layers=96) == 96


def test_plan_file(tmp_path: Path) -> None:
    f = tmp_path / "plan.yaml"
    f.write_text("parallel: {tp: 8, pp: 2, dp: 4, zero: 1}\nheads: 32\nlayers: model.layers\n"
                 "replicated: [model.norm]\n")
    pf = load_plan_file(f)
    assert pf.plan == ParallelPlan(tp=8, pp=2, dp=4, zero=1)
    assert (pf.heads, pf.layers, pf.replicated) == (32, "model.layers", ("model.norm",))


@pytest.mark.parametrize("text", [
    "tp: 8\n",                          # no parallel mapping
    "parallel: {tp: 8}\nbogus: 1\n",    # unknown key
    "parallel: {tp: eight}\n",          # not an integer
    "parallel: {tp: 8}\nheads: -1\n",
    "parallel: [",                      # not YAML
])
def test_bad_plan_file(tmp_path: Path, text: str) -> None:
    f = tmp_path / "plan.yaml"
    f.write_text(text)
    with pytest.raises(PlanError) as err:
        load_plan_file(f)
    assert err.value.code == "E0805"
