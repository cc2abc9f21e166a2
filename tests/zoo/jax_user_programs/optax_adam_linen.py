# ruff: noqa: E741  (a user program, written as users write them)
"""One Adam step of a linen MLP."""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

BATCH = 8
class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4)(nn.relu(nn.Dense(32)(x)))
model = MLP()
tx = optax.adam(1e-3)
def f(params, opt_state, x, y):
    def loss(p):
        return jnp.mean((model.apply(p, x) - y) ** 2)
    l, g = jax.value_and_grad(loss)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return l, optax.apply_updates(params, upd), opt_state
def get_inputs():
    x = jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16))
    y = jax.random.normal(jax.random.PRNGKey(2), (BATCH, 4))
    params = model.init(jax.random.PRNGKey(0), x)
    return [params, tx.init(params), x, y]
