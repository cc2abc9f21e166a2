"""The model zoo (catalogue.py): every model analyses with complete coverage, validates,
and counts at least the FLOPs torch's FlopCounterMode counts (zoo_run.py), and close."""

from __future__ import annotations

import pytest
from catalogue import ZOO, ZooModel
from zoo_run import FLOP_RATIO_MAX, run_zoo_model

pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _param(z: ZooModel) -> object:
    return pytest.param(z, id=z.name, marks=[pytest.mark.slow] if z.slow else [])


def test_zoo_is_large_and_varied() -> None:
    libraries = {z.name.split("/")[0] for z in ZOO}
    assert len(ZOO) >= 30
    assert libraries == {"torchvision", "timm", "transformers"}
    assert sum(not z.slow for z in ZOO) >= 28  # most of it runs in CI


@pytest.mark.parametrize("model", [_param(z) for z in ZOO])
def test_zoo_model(model: ZooModel) -> None:
    row = run_zoo_model(model)
    assert row.coverage_complete, row.uncovered
    assert row.validation.startswith("passed"), row.validation
    # a lower bound on the work: never below the contractions torch itself counts
    assert row.solar_flops >= row.counter_floor * (1 - 1e-9), row
    assert row.flop_ratio <= FLOP_RATIO_MAX, row
