"""Every JAX sample lowers with zero uncovered primitives and validates end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from jax_check import SAMPLES, assert_outputs_close, run_lowered
from sample_sizes import overrides

from solar.frontends.jaxfe import lower_jaxpr, reference_data, trace_jax_file
from solar.ir import print_program

pytest.importorskip("jax")
pytest.importorskip("flax")
pytestmark = pytest.mark.jax

JAX_SAMPLES = sorted(p for p in SAMPLES.glob("*.py") if not p.stem.startswith("dist_"))
"""Single-device samples; the dist_*.py ones run on host devices (test_jax_distributed.py)."""
TOLERANCE = {"mpc_rollout": 1e-4, "flax_transformer_block": 1e-4}


def test_samples_exist() -> None:
    names = {p.stem for p in JAX_SAMPLES}
    assert {
        "flax_mlp",
        "flax_cnn",
        "flax_transformer_block",
        "fk_7dof",
        "mpc_rollout",
        "diffusion_policy_step",
        "kalman_filter",
        "cnn_grad_step",
        "atari_policy_uint8",
        "least_squares_cholesky",
    } <= names


@pytest.mark.parametrize("path", JAX_SAMPLES, ids=[p.stem for p in JAX_SAMPLES])
def test_sample_validates(path: Path) -> None:
    from solar.validate import validate

    tol = TOLERANCE.get(path.stem, 1e-5)
    capture = trace_jax_file(path, overrides=overrides(path.stem))
    lowered = lower_jaxpr(capture)
    assert lowered.fully_covered, lowered.coverage
    assert lowered.ops_seen == lowered.ops_lowered > 0
    inputs, want = reference_data(capture, lowered=lowered)
    assert_outputs_close(run_lowered(lowered, inputs), want, tol, tol)
    result = validate(lowered.program, inputs, want)
    assert result.passed, result.mismatch or result.reason


def test_sample_naming_conventions() -> None:
    lowered = lower_jaxpr(trace_jax_file(SAMPLES / "diffusion_policy_step.py"))
    assert lowered.inputs == ("x0", "x1", "x2", "x3")
    assert lowered.outputs == ("y0",)
    params = [name for _, name in lowered.params]
    assert all(p.startswith("p_") for p in params)
    assert "p_NoisePredictor_0_Conv_0_kernel" in params
    roles = {t.name: t.role for t in lowered.program.tensors}
    assert all(roles[p] == "param" for p in params)
    assert lowered.constant_values  # the DDPM schedule
    assert not lowered.uncovered_values


def test_parity_mlp_ir_golden(golden: object) -> None:
    lowered = lower_jaxpr(trace_jax_file(SAMPLES / "parity_mlp.py"))
    golden.check("frontends/jaxfe/parity_mlp.alir", print_program(lowered.program))  # type: ignore[attr-defined]
