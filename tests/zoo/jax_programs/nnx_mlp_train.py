"""One SGD step of the flax.nnx MLP of nnx_mlp.py (a sibling import, as model files may):
its split state is the input, jax.value_and_grad."""
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from nnx_mlp import Model

BATCH = 8

def f(params, x, y):
    graphdef, _ = nnx.split(Model(nnx.Rngs(0)))

    def loss(p):
        return jnp.mean((nnx.merge(graphdef, p)(x) - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    return value, jax.tree.map(lambda p, g: p - 1e-2 * g, params, grads)


def get_inputs():
    _, params = nnx.split(Model(nnx.Rngs(0)))
    key = jax.random.PRNGKey(1)
    return [params, jax.random.normal(key, (BATCH, 16)), jax.random.normal(key, (BATCH, 4))]
