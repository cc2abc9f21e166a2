"""No option is dropped without a word (issue: a fallback path that drops an option).

A frontend that cannot honour an option stops with E0916 (exit 2) instead of analysing
the program without it; ``--optimizer`` without ``--train`` is refused everywhere. The
fallback capture on real tensors keeps the training step (tests/training/
test_real_capture_step.py).
"""

from __future__ import annotations

import importlib.util

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES

MATMUL = str(SAMPLES / "ir" / "matmul.alir")
FLAX = str(SAMPLES / "jax" / "flax_mlp.py")
TORCH = str(SAMPLES / "torch" / "linear_gelu.py")
DIST = str(SAMPLES / "torch" / "dist_tp_mlp.py")

_JAX = pytest.mark.jax
_TORCH = pytest.mark.torch

DROPPED = [
    pytest.param(MATMUL, ("--train",), "--train is not available for the ir", id="ir-train"),
    pytest.param(MATMUL, ("--train-mode",), "--train-mode is not available", id="ir-train-mode"),
    pytest.param(MATMUL, ("--input-shape", "2,3"), "--input-shape is not", id="ir-input-shape"),
    pytest.param(MATMUL, ("--entry", "f"), "--entry is not available for the ir", id="ir-entry"),
    pytest.param(MATMUL, ("--optimizer", "sgd"), "applies to a training step", id="ir-optimizer"),
    pytest.param(FLAX, ("--train",), "takes no gradient", id="jax-train-no-grad", marks=_JAX),
    pytest.param(FLAX, ("--train-mode",), "--train-mode is not available for the jax",
                 id="jax-train-mode", marks=_JAX),
    pytest.param(FLAX, ("--input-shape", "2,3"), "--input-shape is not available for the jax",
                 id="jax-input-shape", marks=_JAX),
    pytest.param(FLAX, ("--optimizer", "adamw"), "applies to a training step",
                 id="jax-optimizer", marks=_JAX),
    pytest.param(TORCH, ("--optimizer", "adamw"), "applies to a training step",
                 id="torch-optimizer", marks=_TORCH),
    pytest.param(DIST, ("--train-mode",),
                 "--train-mode is not available for a torch.distributed file",
                 id="torch-distributed-train-mode", marks=_TORCH),
    pytest.param(DIST, ("--input-shape", "8,32"),
                 "--input-shape is not available for a torch.distributed file",
                 id="torch-distributed-input-shape", marks=_TORCH),
]


@pytest.mark.parametrize(("source", "args", "says"), DROPPED)
def test_an_option_the_frontend_cannot_honour_stops_the_run(
    capsys: pytest.CaptureFixture[str], source: str, args: tuple[str, ...], says: str
) -> None:
    needs = "jax" if source == FLAX else "torch" if source in (TORCH, DIST) else None
    if needs is not None and importlib.util.find_spec(needs) is None:
        pytest.skip(f"needs {needs}")
    r = run_cli(capsys, "analyze", source, *args, "--validate", "off", "-q")
    assert r.code == 2, r.err
    assert "E0916" in r.err
    assert says in r.err
