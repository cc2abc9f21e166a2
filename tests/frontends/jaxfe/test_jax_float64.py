"""The float64 re-check of JAX programs (Note [JAX float64 run], Note [Float64 noise
floor]): the float64 trace's own constants, and outputs that are rounding noise in every
precision (an Adam step on a gradient that is zero in exact arithmetic)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from solar.frontends.jaxfe import lower_jaxpr, trace_function
from solar.frontends.jaxfe.reference import float64_literals, x64_literals
from solar.ir import FloatLit
from solar.ir.traversal import map_exprs, walk_exprs
from solar.pipeline.validation import rounding_floors

jax = pytest.importorskip("jax")
pytestmark = pytest.mark.jax


def _gelu(x):  # type: ignore[no-untyped-def]
    return jax.nn.gelu(x) * 0.1


def _literals(program) -> set[float]:  # type: ignore[no-untyped-def]
    found: set[float] = set()

    def record(expr):  # type: ignore[no-untyped-def]
        found.update(e.value for e in walk_exprs(expr) if isinstance(e, FloatLit))
        return expr

    for k in program.kernels:
        for st in k.body:
            map_exprs(st, record)
    return found


def test_float64_literals_are_the_float64_traces_own() -> None:
    # gelu's sqrt(2/pi) is computed, not written: its float32 rounding's shortest decimal
    # (0.7978846) is 3e-8 away from the float64 run's value; a written 0.1 stays 0.1
    capture = trace_function(_gelu, [np.ones((4, 4), np.float32)])
    traced = x64_literals(capture)
    c = math.sqrt(2 / math.pi)
    assert traced[float(np.float32(c))] == pytest.approx(c, rel=1e-15)
    wide = _literals(float64_literals(lower_jaxpr(capture).program, traced))
    assert any(abs(v - c) < 1e-15 for v in wide)
    assert 0.1 in wide
    shortest = _literals(float64_literals(lower_jaxpr(capture).program))
    assert 0.7978846 in shortest and not any(abs(v - c) < 1e-15 for v in shortest)


@pytest.mark.parametrize(
    ("p32", "p64", "floor"),
    [
        (np.array([1e-4, -3e-4], np.float32), np.array([1e-12, -2e-12]), 3e-4),  # noise
        (np.array([1.0, 2.0], np.float32), np.array([1.0, 2.0]), None),  # exact: none
        (np.array([np.inf], np.float32), np.array([1.0]), None),  # not finite: none
        (np.array([1, 2], np.int32), np.array([1, 2], np.int64), None),  # not float
    ],
)
def test_rounding_floors_scale_the_programs_own_fp32_error(
    p32: np.ndarray, p64: np.ndarray, floor: float | None
) -> None:
    floors = rounding_floors({"y": p32}, {"y": p64})
    if floor is None:
        assert floors == {}
    else:
        assert floors["y"] == pytest.approx(16 * 2.0**-29 * floor, rel=1e-3)
    assert rounding_floors({"y": p32}, {"y": p64[:1]}) == {} or p32.shape == (1,)


ADAM_KEY_BIAS = """
    import jax
    import jax.numpy as jnp
    import optax

    BATCH = 2
    SEQ = 8
    tx = optax.adam(1e-3)


    def attend(p, x):
        q = x @ p["wq"]
        k = x @ p["wk"] + p["bk"]  # its gradient is zero: softmax ignores q . bk
        a = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / 4.0, axis=-1)
        return jax.nn.gelu(a @ (x @ p["wv"]))


    def f(params, opt_state, x, y):
        def loss(p):
            return jnp.mean((attend(p, x) - y) ** 2)

        value, grads = jax.value_and_grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return value, optax.apply_updates(params, updates), opt_state


    def get_inputs():
        keys = jax.random.split(jax.random.PRNGKey(0), 5)
        p = {n: jax.random.normal(k, (16, 16)) * 0.3 for n, k in zip(("wq", "wk", "wv"), keys)}
        p["bk"] = jnp.zeros(16)
        x = jax.random.normal(keys[3], (BATCH, SEQ, 16))
        return [p, tx.init(p), x, jax.random.normal(keys[4], (BATCH, SEQ, 16))]
"""


def test_an_adam_step_on_a_zero_gradient_validates_in_float64(tmp_path: Path) -> None:
    pytest.importorskip("optax")
    from solar.pipeline import AnalyzeOptions, analyze

    path = tmp_path / "adam_key_bias.py"
    path.write_text(textwrap.dedent(ADAM_KEY_BIAS))
    report = analyze(path, AnalyzeOptions(train_step=True))
    val = report.validation
    # fp32: the updated key bias is lr * noise / eps on both sides, and differs
    assert val.fp32_check is not None
    assert val.status == "passed" and val.dtype == "float64", val.reason
    assert report.coverage.complete and report.training is not None
