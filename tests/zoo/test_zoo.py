"""The model zoo (catalogue.py): every model analyses with complete coverage, validates,
and counts at least the FLOPs torch's FlopCounterMode counts (zoo_run.py), and close; one
model per library also bounds and validates a training step. A library that is not
installed skips its models, saying so (the zoo extra pins what CI installs)."""

from __future__ import annotations

import importlib.util

import pytest
from catalogue import ZOO, ZooModel
from zoo_run import FLOP_RATIO_MAX, run_zoo_model, run_zoo_train

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

LIBRARIES = {
    "torchvision", "timm", "transformers", "torch_geometric", "diffusers", "monai",
    "ultralytics", "open_clip", "einops",
}  # fmt: skip


def _param(z: ZooModel) -> object:
    return pytest.param(z, id=z.name, marks=[pytest.mark.slow] if z.slow else [])


def _require(model: ZooModel) -> None:
    if importlib.util.find_spec(model.library) is None:
        pytest.skip(f"{model.library} is not installed (pip install -e '.[zoo]')")


def test_zoo_is_large_and_varied() -> None:
    assert len(ZOO) >= 110
    assert {z.library for z in ZOO} == LIBRARIES
    assert sum(not z.slow for z in ZOO) >= 45  # most of it runs in CI
    trained = {z.library for z in ZOO if z.train}
    assert trained >= LIBRARIES - {"torchvision", "timm", "transformers"}  # tests/training
    assert len({z.name for z in ZOO}) == len(ZOO)


@pytest.mark.parametrize("model", [_param(z) for z in ZOO])
def test_zoo_model(model: ZooModel) -> None:
    _require(model)
    row = run_zoo_model(model)
    assert row.coverage_complete, row.uncovered
    assert row.validation.startswith("passed"), row.validation
    # a lower bound on the work: never below the contractions torch itself counts
    assert row.solar_flops >= row.counter_floor * (1 - 1e-9), row
    assert row.flop_ratio <= FLOP_RATIO_MAX, row


@pytest.mark.parametrize("model", [_param(z) for z in ZOO if z.train])
def test_zoo_training_step(model: ZooModel) -> None:
    _require(model)
    row = run_zoo_train(model)
    assert row.coverage_complete, row.uncovered
    assert row.validation.startswith("passed"), row.validation
    forward, backward, optimizer = row.phase_flops
    assert backward > forward > 0
    assert optimizer > 0
