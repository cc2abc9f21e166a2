"""Training steps in JAX/Flax (optax) validate, and the PyTorch/JAX MLP twins bound the
same work (samples/{torch,jax}/train_mlp_sgd.py; docs/training.md § Parity)."""

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


@pytest.mark.parametrize("name", ["mlp", "mlp_sgd", "cnn", "transformer_block", "lstm"])
def test_jax_training_samples_validate(name: str) -> None:
    r = analyze(ROOT / "samples" / "jax" / f"train_{name}.py", AnalyzeOptions(cache="cold"))
    assert r.coverage.complete
    assert r.validation.status == "passed"


def _kernel_flops(report: object) -> dict[str, float]:
    return {k.name: k.flops for k in report.archs[0].kernels}  # type: ignore[attr-defined]


def test_mlp_training_step_parity() -> None:
    jax_r = analyze(ROOT / "samples/jax/train_mlp_sgd.py", AnalyzeOptions(cache="cold"))
    torch_r = analyze(
        ROOT / "samples/torch/train_mlp_sgd.py", AnalyzeOptions(train_step=True, cache="cold")
    )
    assert jax_r.validation.status == torch_r.validation.status == "passed"
    # the same interface (x, target, parameters -> loss, gradients, new parameters)
    assert jax_r.fused_dram_bytes == torch_r.fused_dram_bytes
    batch, n_in, hidden, n_out = 32, 64, 128, 10
    assert jax_r.fused_dram_bytes == 4 * (
        batch * n_in
        + batch * n_out  # x, target
        + 3 * (hidden * n_in + hidden + n_out * hidden + n_out)  # params, grads, new params
        + 1  # loss
    )
    # the five matmuls (two forward, three backward) are the same contractions
    jm = sorted(f for n, f in _kernel_flops(jax_r).items() if n.startswith("dot_general"))
    tm = sorted(
        f for n, f in _kernel_flops(torch_r).items() if n.endswith(("_mm", "_mm_1", "_mm_2"))
    )
    assert (
        jm == tm == sorted([2.0 * batch * n_in * hidden] * 2 + [2.0 * batch * hidden * n_out] * 3)
    )
    # Total FLOPs differ by two documented frontend effects, exactly:
    # eager multiplies the loss's cotangent (ones) by the target (batch*out FLOPs), which
    # the jaxpr folds (its cotangent is the literal 1.0); the jaxpr sums each bias
    # gradient over a broadcast size-1 axis once more (out + hidden FLOPs).
    assert torch_r.flops - jax_r.flops == batch * n_out - (n_out + hidden)
