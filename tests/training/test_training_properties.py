"""Properties of a training step's phases over random MLP shapes (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum
from solar.ir import eliminate_dead_code, verify_program
from solar.training import split_phases

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_FEW = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _flops(program: object) -> float:
    return float(evaluate_costs(lift_to_einsum(program)).group_flops.sum())  # type: ignore[arg-type]


def _compulsory(program: object) -> float:
    c = evaluate_costs(lift_to_einsum(program))  # type: ignore[arg-type]
    return float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum())


@_FEW
@given(
    st.integers(1, 6), st.integers(1, 9), st.integers(1, 9), st.integers(1, 5),
    st.sampled_from(["sgd", "adam", "adamw"]),
)
def test_phases_partition_the_step(m: int, k: int, h: int, n: int, kind: str) -> None:
    from solar.frontends.pytorch import (
        OptimizerSpec,
        TrainStep,
        lower_capture,
        phase_of_kernel,
        trace_module,
    )

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(k, h), torch.nn.Tanh(), torch.nn.Linear(h, n))
    x = torch.randn(m, k, requires_grad=True)
    step = TrainStep(OptimizerSpec(kind, momentum=0.9 if kind == "sgd" else 0.0))  # type: ignore[arg-type]
    lowered = lower_capture(trace_module(model, [x], step=step))
    assert lowered.fully_covered
    program = eliminate_dead_code(lowered.program)
    parts = split_phases(program, phase_of_kernel)
    assert [p.phase for p in parts] == ["forward", "backward", "optimizer"]
    for p in parts:
        verify_program(p.program)
    # FLOPs partition exactly; boundary values make the phases' traffic at least the step's
    assert sum(_flops(p.program) for p in parts) == _flops(program)
    assert sum(_compulsory(p.program) for p in parts) >= _compulsory(program)
    # matmuls: the backward does twice the forward's (dW and dX per layer)
    fwd_mm = 2 * m * (k * h + h * n)
    bwd = _flops(parts[1].program)
    assert bwd >= 2 * fwd_mm
