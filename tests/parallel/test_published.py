"""Published runs with measured step times: SOLAR's bound must stay at or below each.

The table is `benchmarks/distributed/published.py`'s (Korthikanti et al. 2022, Table 5:
GPT 22B to 1T on DGX A100, full recompute and sequence parallelism + selective
recompute; Narayanan et al. 2021, Table 1: GPT 39B to 310B with PTD-P); each case
captures `benchmarks/distributed/gpt.py` at the run's sizes on fake tensors and bounds
the run's plan. A bound above a measured time is a soundness bug.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from solar.distributed import DistributedRequest, bound_prepared, parse_parallel
from solar.pipeline import AnalyzeOptions, PreparedProgram, lift_source

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def _published() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "published", ROOT / "benchmarks" / "distributed" / "published.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


PUBLISHED = _published()


@functools.cache
def _prepared(layers: int, hidden: int, heads: int, seq: int, batch: int) -> PreparedProgram:
    """One capture per model: its full-recompute and selective runs share it (a
    `distributed` request turns the symbolic re-captures off)."""
    sizes = {"LAYERS": layers, "HIDDEN": hidden, "HEADS": heads, "SEQ": seq, "BATCH": batch}
    options = AnalyzeOptions(validate="off", train=True, train_step=True, sizes=sizes,
                             distributed=DistributedRequest("DGX_A100", None, 1, 1))
    return lift_source(PUBLISHED.GPT, options)


def _case(run: object) -> object:
    # the 48-layer 22B runs capture in under a minute; the larger ones take minutes
    small = getattr(run, "layers", 0) <= 48
    marks = [pytest.mark.torch] + ([] if small else [pytest.mark.slow])
    return pytest.param(run, id=getattr(run, "name", "?").replace(" ", "_"), marks=marks)


@pytest.mark.parametrize("run", [_case(r) for r in PUBLISHED.RUNS])
def test_bound_is_at_most_the_measured_step(run: object) -> None:
    r: Any = run
    prepared = _prepared(r.layers, r.hidden, r.heads, r.seq, r.micro_batch)
    request = DistributedRequest(r.cluster, parse_parallel(r.parallel), r.micro_batch,
                                 r.global_batch, recompute=r.recompute, phase="train")
    assert prepared.front.step is not None
    d = bound_prepared(prepared.program, prepared.graph, prepared.sizes, request,
                       phase_of=prepared.front.step.phase_of, precision=prepared.precision,
                       size_constants=prepared.front.source_sizes)
    assert d.step.time_s is not None
    assert d.structure.layers == r.layers and d.structure.hidden == r.hidden
    assert d.step.time_s <= r.measured_s
    # and not vacuous: the bound is at least a third of the measured step
    assert d.step.time_s >= r.measured_s / 3
    if d.schedule is not None and r.own_schedule:  # pipelined: the run's own schedule
        # (Megatron's 1F1B or interleaved 1F1B) bounds it too, and the schedule-free
        # bound is below that
        own = next(s for s in d.schedule.schedules if s.schedule == d.schedule.drawn)
        assert d.schedule.bound_s <= own.time_s * (1 + 1e-9)
        assert own.time_s <= r.measured_s
