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


@_FEW
@given(
    st.integers(1, 6), st.integers(1, 9), st.integers(1, 9), st.integers(1, 5),
    st.sampled_from(["sgd", "momentum", "adamw"]),
)
def test_jax_phases_partition_the_step(m: int, k: int, h: int, n: int, kind: str) -> None:
    """The JAX twin of the property above: a functional step split by its jaxpr's markers."""
    jax = pytest.importorskip("jax")
    optax = pytest.importorskip("optax")
    import numpy as np

    from solar.frontends.jaxfe import lower_jaxpr, trace_function
    from solar.training import phase_of_kernel

    jnp = jax.numpy
    opt = {"sgd": optax.sgd(0.1), "momentum": optax.sgd(0.1, momentum=0.9),
           "adamw": optax.adamw(1e-3)}[kind]

    def step(p: dict[str, object], state: object, x: object) -> object:
        def loss(q: dict[str, object]) -> object:
            return jnp.mean(jnp.tanh(x @ q["w1"] + q["b1"]) @ q["w2"] + q["b2"])

        value, g = jax.value_and_grad(loss)(p)
        updates, state = opt.update(g, state, p)
        return value, optax.apply_updates(p, updates), state

    rng = np.random.default_rng(0)
    params = {name: rng.standard_normal(shape, dtype=np.float32)
              for name, shape in (("w1", (k, h)), ("b1", (h,)), ("w2", (h, n)), ("b2", (n,)))}
    x = rng.standard_normal((m, k), dtype=np.float32)
    lowered = lower_jaxpr(trace_function(step, [params, opt.init(params), x]))
    assert lowered.fully_covered
    program = eliminate_dead_code(lowered.program)
    parts = split_phases(program, phase_of_kernel)
    assert [p.phase for p in parts] == ["forward", "backward", "optimizer"]
    for p in parts:
        verify_program(p.program)
    assert sum(_flops(p.program) for p in parts) == _flops(program)
    assert sum(_compulsory(p.program) for p in parts) >= _compulsory(program)
    # the backward's matmuls: dW1 (x needs no gradient), dW2 and dX2; a contraction of
    # one term is a plain product (1 FLOP per output, no add). The loss is a mean, so the
    # output's gradient is one broadcast value: dW2's rows repeat across n and dX2's
    # across m, each charged once (Note [Repeated work] in docs/bounds.md)
    def mm(rows: int, terms: int, cols: int) -> int:
        return rows * cols * (2 * terms if terms > 1 else 1)

    assert _flops(parts[1].program) >= mm(k, m, h) + mm(h, m, 1) + mm(1, n, h)
