"""XLA's own cost analysis as a cross-check of the IR's FLOPs and bytes."""

from __future__ import annotations

import pytest
from jax_check import SAMPLES, program_costs

from solar.frontends.jaxfe import lower_jaxpr, trace_jax_file, xla_cost_analysis, xla_cross_check

pytest.importorskip("jax")
pytest.importorskip("flax")
pytestmark = pytest.mark.jax


def test_cost_analysis_dicts() -> None:
    report = xla_cost_analysis(trace_jax_file(SAMPLES / "parity_matmul.py"))
    assert set(report) == {"unoptimized", "compiled"}
    for entry in report.values():
        assert set(entry) == {"flops", "transcendentals", "bytes_accessed"}
        assert entry["flops"] > 0
        assert entry["bytes_accessed"] > 0


@pytest.mark.parametrize("name", ["parity_matmul", "parity_conv2d"])
def test_contraction_flops_agree_with_xla(name: str) -> None:
    """Dense matmul/conv plus a bias add: IR FLOPs equal XLA's (multiply-add = 2)."""
    capture = trace_jax_file(SAMPLES / f"{name}.py")
    flops, unfused, fused = program_costs(lower_jaxpr(capture).program)
    check = xla_cross_check(capture)
    assert check.unoptimized is not None
    assert check.compiled is not None
    assert flops == check.unoptimized.flops
    assert fused <= check.compiled.bytes_accessed
    assert unfused <= check.unoptimized.bytes_accessed


def test_xla_counts_a_loop_body_once() -> None:
    """XLA's HLO cost analysis does not multiply a while body by its trip count; SOLAR does."""
    capture = trace_jax_file(SAMPLES / "mpc_rollout.py")
    flops, _, _ = program_costs(lower_jaxpr(capture).program)
    check = xla_cross_check(capture)
    assert check.unoptimized is not None
    assert flops > 5 * check.unoptimized.flops


def test_transcendentals_are_separate_in_xla() -> None:
    capture = trace_jax_file(SAMPLES / "parity_attention.py")
    flops, _, _ = program_costs(lower_jaxpr(capture).program)
    check = xla_cross_check(capture)
    assert check.unoptimized is not None
    assert check.unoptimized.transcendentals == 2 * 16 * 16  # one exp per score
    # IR counts exp as a FLOP and a sum of N terms as N adds; XLA counts N - 1 and no exp.
    assert flops == check.unoptimized.flops + check.unoptimized.transcendentals + 2 * 2 * 16
