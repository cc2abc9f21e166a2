"""JAX kernels named from their source (issue 31, Note [JAX kernel names]): the user's
functions and the ``jax.nn`` function they called, not ``exp_3``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from solar.frontends.jaxfe import lower_jaxpr, trace_function, trace_jax_file
from solar.report.breakdown import kernel_origin

jax = pytest.importorskip("jax")
jnp = jax.numpy
pytestmark = pytest.mark.jax

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "jax"


def attention(q, k, v):  # type: ignore[no-untyped-def]
    return jax.nn.softmax(q @ k.T, axis=-1) @ v


def mlp(x, w):  # type: ignore[no-untyped-def]
    return jax.nn.gelu(x @ w)


def f(q, k, v, w):  # type: ignore[no-untyped-def]
    return mlp(attention(q, k, v), w)


def test_kernels_are_named_from_the_user_functions_and_jax_nn() -> None:
    x = np.ones((8, 8), np.float32)
    lowered = lower_jaxpr(trace_function(f, [x, x, x, x]))
    names = [k.name for k in lowered.program.kernels]
    assert {"attention_dot_general", "attention_softmax_exp", "attention_softmax_reduce_max",
            "attention_dot_general_1", "mlp_dot_general", "mlp_gelu_tanh"} <= set(names)
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names)
    # the entry `f` and the test's own frames (pytest's) name nothing
    assert not any(n.startswith(("f_", "test_", "pytest")) for n in names)
    assert {"attention", "attention.softmax", "mlp", "mlp.gelu"} <= set(lowered.module_paths)
    # op-type rows stay primitives (Note [Kernel origins])
    assert kernel_origin("attention_softmax_exp", lowered.module_paths) == (
        "attention.softmax", "exp")


def test_a_jitted_function_names_its_body_and_a_jitted_entry_does_not() -> None:
    # jax traces a jit body on a stack of its own: the call's function scope and the
    # `jit` name carry over; the entry's own name adds nothing
    attn = jax.jit(attention)

    def block(x):  # type: ignore[no-untyped-def]
        return attn(x, x, x)

    @jax.jit
    def g(x):  # type: ignore[no-untyped-def]
        return block(x) + attn(x, x, x) * 2.0 + jax.nn.relu(x)

    x = np.ones((8, 8), np.float32)
    names = [k.name for k in lower_jaxpr(trace_function(g, [x])).program.kernels]
    assert {"block_attention_dot_general", "block_attention_softmax_exp",
            "attention_dot_general", "attention_softmax_exp", "relu_max", "mul",
            "add"} <= set(names)
    assert not any(n.startswith("g_") for n in names)


def test_names_are_stable() -> None:
    x = np.ones((4, 4), np.float32)
    runs = [[k.name for k in lower_jaxpr(trace_function(f, [x, x, x, x])).program.kernels]
            for _ in range(2)]
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    ("sample", "expected"),
    [
        ("flax_mlp.py", {"gelu_tanh", "gelu_tanh_1", "softmax_exp", "Dense_0_dot_general"}),
        ("mpc_rollout.py", {"softmax_exp", "softmax_reduce_sum"}),
        ("train_mlp_sgd.py", {"model_dot_general", "model_relu_max",
                              "backward_model_dot_general"}),
    ],
)
def test_samples_name_their_functions(sample: str, expected: set[str]) -> None:
    names = {k.name for k in lower_jaxpr(trace_jax_file(SAMPLES / sample)).program.kernels}
    assert expected <= names
    # no kernel named only after its primitive where a function made it
    assert not {"tanh", "exp", "tanh_1", "exp_1", "dot_general_1"} & names


def _cell(h, x):  # type: ignore[no-untyped-def]
    return jnp.tanh(h + x)


def _rnn(xs):  # type: ignore[no-untyped-def]
    def step(h, x):  # type: ignore[no-untyped-def]
        h = _cell(h, x)
        return h, h * 2.0

    return jax.lax.scan(step, jnp.zeros(4), xs)


def loops(xs, v):  # type: ignore[no-untyped-def]
    def body(i, v):  # type: ignore[no-untyped-def]
        return v * 0.5 + 1.0

    def wbody(s):  # type: ignore[no-untyped-def]
        return s[0] + 1, s[1] * 2.0

    a = jax.lax.fori_loop(0, 5, body, v)
    b = jax.lax.while_loop(lambda s: s[0] < 3, wbody, (0, v))
    return _rnn(xs), a, b, jax.lax.scan(lambda c, x: (c + x, c), v, xs)


def test_loop_kernels_are_named_after_their_body_function() -> None:
    # a loop is one kernel doing what its body does: the loop's caller, then the body
    # function (jax traces it on a stack of its own); a lambda body names nothing
    x = np.ones((6, 4), np.float32)
    lowered = lower_jaxpr(trace_function(loops, [x, x[0]]))
    names = [k.name for k in lowered.program.kernels]
    # `_rnn` is private and names nothing; `step`, an IR keyword, is not suffixed
    assert names == ["body_scan", "wbody_while", "step_scan", "scan"]
    assert {"body", "wbody", "step"} <= set(lowered.module_paths)


def test_nnx_and_equinox_modules_name_their_kernels() -> None:
    # no name stack outside linen: the user's module class (its `__call__`) and the
    # library module it called (the outermost: eqx.nn.MLP, not the Linear inside)
    nnx = pytest.importorskip("flax.nnx")
    eqx = pytest.importorskip("equinox")

    class Block(nnx.Module):  # type: ignore[misc]
        def __init__(self, rngs: Any) -> None:
            self.norm = nnx.LayerNorm(8, rngs=rngs)
            self.fc = nnx.Linear(8, 8, rngs=rngs)

        def __call__(self, x: Any) -> Any:
            return self.fc(self.norm(x))

    block = Block(nnx.Rngs(0))
    mlp = eqx.nn.MLP(8, 4, 16, 1, key=jax.random.PRNGKey(0))

    def g(x):  # type: ignore[no-untyped-def]
        return jax.vmap(mlp)(block(x))

    x = np.ones((2, 8), np.float32)
    names = [k.name for k in lower_jaxpr(trace_function(g, [x])).program.kernels]
    assert {"Block_LayerNorm_rsqrt", "Block_Linear_dot_general", "MLP_dot_general",
            "MLP_relu_max"} <= set(names), names
