"""Published runs with measured step times: SOLAR's bound must stay at or below each.

The table is `benchmarks/distributed/published.py`'s (Korthikanti et al. 2022, Table 5:
GPT 22B to 1T on DGX A100, full recompute and sequence parallelism + selective
recompute); each case captures `benchmarks/distributed/gpt.py` at the run's sizes on
fake tensors and bounds the run's plan. A bound above a measured time is a soundness bug.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from solar.distributed import DistributedRequest, parse_parallel
from solar.pipeline import AnalyzeOptions, analyze

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


def _case(run: object) -> object:
    # the 48-layer 22B runs capture in about a minute; the larger ones take minutes
    small = getattr(run, "layers", 0) <= 48
    marks = [pytest.mark.torch] + ([] if small else [pytest.mark.slow])
    return pytest.param(run, id=getattr(run, "name", "?").replace(" ", "_"), marks=marks)


@pytest.mark.parametrize("run", [_case(r) for r in PUBLISHED.RUNS])
def test_bound_is_at_most_the_measured_step(run: object) -> None:
    r = run
    request = DistributedRequest(
        r.cluster, parse_parallel(r.parallel), r.micro_batch, r.global_batch,  # type: ignore[attr-defined]
        recompute=r.recompute, phase="train",  # type: ignore[attr-defined]
    )
    sizes = {"LAYERS": r.layers, "HIDDEN": r.hidden, "HEADS": r.heads,  # type: ignore[attr-defined]
             "SEQ": r.seq, "BATCH": r.micro_batch}  # type: ignore[attr-defined]
    report = analyze(PUBLISHED.GPT, AnalyzeOptions(validate="off", train=True, train_step=True,
                                                   sizes=sizes, distributed=request))
    d = report.distributed
    assert d is not None and d.step.time_s is not None
    assert d.structure.layers == r.layers and d.structure.hidden == r.hidden  # type: ignore[attr-defined]
    assert d.step.time_s <= r.measured_s  # type: ignore[attr-defined]
    # and not vacuous: the bound is at least a third of the measured step
    assert d.step.time_s >= r.measured_s / 3  # type: ignore[attr-defined]
