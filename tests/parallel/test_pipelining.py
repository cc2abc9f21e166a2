"""Pipeline schedules on a real captured training step: per-stage F/B/W/O read off the
kernels, the schedule-free bound in the step bound, the report and the summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.distributed import DistributedRequest, bound_prepared, parse_parallel
from solar.distributed.schedules import SCHEDULES
from solar.pipeline import AnalyzeOptions, PreparedProgram, lift_source
from solar.report import DistributedInfo
from solar.report.render_distributed import distributed_lines
from tests.cli_helpers import run_cli

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "benchmarks" / "distributed" / "gpt.py"
SIZES = {"LAYERS": 4, "HIDDEN": 64, "HEADS": 4, "SEQ": 32, "BATCH": 1, "VOCAB": 1024}


@pytest.fixture(scope="module")
def gpt() -> PreparedProgram:
    return lift_source(GPT, AnalyzeOptions(
        validate="off", train=True, train_step=True, sizes=SIZES,
        distributed=DistributedRequest("DGX_A100", None, 1, 1)))


def _bound(p: PreparedProgram, plan: str, global_batch: int = 8, **kw: object
           ) -> DistributedInfo:
    req = DistributedRequest("DGX_A100", parse_parallel(plan), 1, global_batch, **kw)  # type: ignore[arg-type]
    assert p.front.step is not None
    return bound_prepared(p.program, p.graph, p.sizes, req, phase_of=p.front.step.phase_of,
                          precision=p.precision, size_constants=p.front.source_sizes)


def test_stages_split_the_step_and_are_uneven(gpt: PreparedProgram) -> None:
    one = _bound(gpt, "tp=1,pp=1,dp=1", global_batch=1)
    info = _bound(gpt, "tp=1,pp=4,dp=1")
    assert one.schedule is None and info.schedule is not None
    st = info.stages
    assert len(st) == 4
    assert all(s.forward_s > 0 and s.input_grad_s > 0 and s.weight_grad_s > 0 for s in st)
    # the LM head and the loss sit on the last stage, the embedding's update on the first
    assert st[3].forward_s > st[1].forward_s
    assert st[0].optimizer_s > st[1].optimizer_s
    assert st[1].forward_s == pytest.approx(st[2].forward_s)
    assert st[1].input_grad_s == pytest.approx(st[2].input_grad_s)
    assert st[1].weight_grad_s == pytest.approx(st[2].weight_grad_s)
    # the stages share the single-device step's work out, nothing more
    total = sum(s.forward_s + s.input_grad_s + s.weight_grad_s for s in st)
    per_pipe = one.ranks[0].compute_s
    assert total <= per_pipe * 1.0001


def test_step_bound_takes_the_schedule_free_bound(gpt: PreparedProgram) -> None:
    info = _bound(gpt, "tp=1,pp=4,dp=1", schedules=("all",))
    sc = info.schedule
    assert sc is not None and info.step.time_s is not None
    assert info.step.time_s >= sc.bound_s >= min(sc.one_way_s, sc.bidirectional_s or 1e9) - 1e-15
    assert info.step.time_s >= max(r.time_s for r in info.ranks)
    names = {r.schedule for r in sc.schedules}
    assert names == set(SCHEDULES) - {"interleaved"}  # vpp=1: interleaved cannot run
    for r in sc.schedules:
        floor = sc.bidirectional_s if r.schedule == "dualpipe" else sc.one_way_s
        assert floor is not None and r.time_s >= floor * (1 - 1e-9)
    gantt = next(r for r in sc.schedules if r.schedule == sc.drawn)
    assert sc.drawn == "1f1b" and len(gantt.gantt) == 4
    lines = "\n".join(distributed_lines(info))
    assert "1f1b timeline" in lines and "pipeline: any schedule >=" in lines


def test_interleaved_needs_a_multiple_of_the_stages(gpt: PreparedProgram) -> None:
    from solar.diagnostics import PlanError

    with pytest.raises(PlanError) as err:
        _bound(gpt, "tp=1,pp=2,dp=1,vpp=2", global_batch=3)
    assert err.value.code == "E0808"
    info = _bound(gpt, "tp=1,pp=2,dp=1,vpp=2", global_batch=4)
    assert info.schedule is not None and info.schedule.drawn == "interleaved"
    # each rank holds two of the four layers, whichever rank made a layer's input
    plain = _bound(gpt, "tp=1,pp=2,dp=1", global_batch=4)
    for a, b in zip(info.stages, plain.stages, strict=True):
        assert a.forward_s == pytest.approx(b.forward_s)
        assert a.input_grad_s == pytest.approx(b.input_grad_s)


def test_unknown_schedule_is_coded(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", str(GPT), "--validate", "off", "-q", "--train",
                "--cluster", "DGX_A100", "--parallel", "pp=2", "--schedule", "pipedream")
    assert r.code == 2 and "error[E0804]" in r.err


def test_failures_in_the_report(gpt: PreparedProgram) -> None:
    from solar.distributed.failures import Failure

    info = _bound(gpt, "tp=1,pp=4,dp=4", global_batch=32, failures=(Failure(3, 1),))
    fl = info.failures
    assert fl is not None and info.schedule is not None
    assert fl.no_failure_s == pytest.approx(info.schedule.one_way_s)
    assert fl.time_s >= fl.no_failure_s and fl.stages[0].extra_micro_batches == 3
    assert "failures (one-way schedule-free bound): step >=" in "\n".join(distributed_lines(info))


def test_fail_without_a_pipeline_is_coded(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", str(GPT), "--validate", "off", "-q", "--train",
                "--set", "LAYERS=2", "--set", "HIDDEN=64", "--set", "HEADS=4", "--set", "SEQ=32",
                "--cluster", "DGX_A100", "--parallel", "dp=2", "--global-batch", "2",
                "--fail", "stage=0:k=1")
    assert r.code == 2 and "error[E0806]" in r.err


def test_gantt_legend_gives_each_operation_its_colour(gpt: PreparedProgram) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from solar.report.plot_distributed import _OPS, extra_panels

    info = _bound(gpt, "tp=1,pp=4,dp=4", global_batch=32)
    ax = Figure().add_subplot()
    extra_panels(info)[0](ax)  # the Gantt chart comes first
    legend = ax.get_legend()
    colours = {text.get_text(): to_hex(handle.get_facecolor())
               for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
               if text.get_text() in _OPS}
    assert colours == {kind: colour.lower() for kind, colour in _OPS.items()}
    assert list(ax.get_yticks()) == [0, 1, 2, 3]  # one tick per pipeline rank


def test_schedules_all_says_which_schedules_these_sizes_cannot_run(gpt: PreparedProgram) -> None:
    info = _bound(gpt, "tp=1,pp=4,dp=4", global_batch=32, schedules=("all",))
    assert info.schedule is not None
    bounded = {r.schedule for r in info.schedule.schedules}
    assert "interleaved" not in bounded and "1f1b" in bounded  # vpp = 1
    assert any(a.startswith("schedule interleaved not bounded: ") and "vpp" in a
               for a in info.assumptions)
