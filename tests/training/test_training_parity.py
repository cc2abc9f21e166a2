"""Training steps in JAX/Flax (optax) validate, and the PyTorch/JAX twins bound the same
work per phase (samples/{torch,jax}/train_{mlp,cnn}_sgd.py; docs/training.md § Parity)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.jax, pytest.mark.torch]

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "name", ["mlp", "mlp_sgd", "cnn", "cnn_sgd", "transformer_block", "lstm"]
)
def test_jax_training_samples_validate(name: str) -> None:
    r = analyze(ROOT / "samples" / "jax" / f"train_{name}.py", AnalyzeOptions(cache="cold"))
    assert r.coverage.complete
    assert r.validation.status == "passed"


def _phase_costs(report: object) -> dict[str, tuple[float, float]]:
    """``{phase: (FLOPs, fused bytes)}`` of a report's training section."""
    training = report.training  # type: ignore[attr-defined]
    assert training is not None
    return {p.phase: (p.flops, p.fused_dram_bytes) for p in training.phases}


def _twins(name: str) -> tuple[object, object]:
    options = AnalyzeOptions(train_step=True, cache="cold")
    jax_r = analyze(ROOT / "samples" / "jax" / f"{name}.py", options)
    torch_r = analyze(ROOT / "samples" / "torch" / f"{name}.py", options)
    assert jax_r.validation.status == torch_r.validation.status == "passed"
    assert jax_r.coverage.complete and torch_r.coverage.complete
    return jax_r, torch_r


@pytest.mark.parametrize("name", ["train_mlp_sgd", "train_cnn_sgd"])
def test_training_step_parity(name: str) -> None:
    """The twins bound the same step: identical FLOPs and fused bytes, per phase and whole.

    Two frontend effects are folded by principled rules, not by the test: eager's
    cotangent seed (``ones_like(loss)``) times the target is ``x * 1`` (no operation,
    solar/ir/masks.py), and the jaxpr's sum of a bias gradient over a broadcast size-1
    axis combines each element with the identity alone (a squeeze view).
    """
    jax_r, torch_r = _twins(name)
    assert jax_r.flops == torch_r.flops  # type: ignore[attr-defined]
    assert jax_r.fused_dram_bytes == torch_r.fused_dram_bytes  # type: ignore[attr-defined]
    phases = _phase_costs(jax_r)
    assert list(phases) == ["forward", "backward", "optimizer"]
    assert phases == _phase_costs(torch_r)
    assert sum(f for f, _ in phases.values()) == jax_r.flops  # type: ignore[attr-defined]


def test_mlp_training_step_by_hand() -> None:
    jax_r, _ = _twins("train_mlp_sgd")
    batch, n_in, hidden, n_out = 32, 64, 128, 10
    # the interface: x, target, parameters -> loss, gradients, new parameters
    assert jax_r.fused_dram_bytes == 4 * (  # type: ignore[attr-defined]
        batch * n_in
        + batch * n_out  # x, target
        + 3 * (hidden * n_in + hidden + n_out * hidden + n_out)  # params, grads, new params
        + 1  # loss
    )
    mm_fwd = 2 * batch * (n_in * hidden + hidden * n_out)
    # two forward matmuls; three backward ones (dW1, dW2 and dX of layer 2)
    flops = dict(_phase_costs(jax_r))
    elementwise_fwd = 3 * batch * hidden + 3 * batch * n_out  # bias, relu (gt, max); bias, mul, sum
    assert flops["forward"][0] == mm_fwd + elementwise_fwd
    bwd_mm = 2 * batch * (n_in * hidden + 2 * hidden * n_out)
    # bias sums (out and hidden), the relu mask's select
    assert flops["backward"][0] == bwd_mm + batch * n_out + 2 * batch * hidden
    n_params = hidden * n_in + hidden + n_out * hidden + n_out
    assert flops["optimizer"][0] == 2 * n_params  # p - lr * g
