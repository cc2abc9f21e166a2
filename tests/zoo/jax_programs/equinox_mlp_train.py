"""One SGD step of an equinox MLP: filter_value_and_grad of an MSE loss, apply_updates."""
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

BATCH = 8


def f(model, x, y):
    def loss(m):
        return jnp.mean((jax.vmap(m)(x) - y) ** 2)

    value, grads = eqx.filter_value_and_grad(loss)(model)
    model = eqx.apply_updates(model, jax.tree.map(lambda g: -1e-2 * g, grads))
    return value, eqx.filter(model, eqx.is_array)


def get_inputs():
    model = eqx.nn.MLP(in_size=16, out_size=4, width_size=32, depth=2, key=jax.random.PRNGKey(0))
    key = jax.random.PRNGKey(1)
    return [model, jax.random.normal(key, (BATCH, 16)), jax.random.normal(key, (BATCH, 4))]
