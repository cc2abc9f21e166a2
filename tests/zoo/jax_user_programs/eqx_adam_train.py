# ruff: noqa: E741  (a user program, written as users write them)
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax

BATCH = 8
tx = optax.adam(1e-3)
model0 = eqx.nn.MLP(16, 4, 32, 2, key=jax.random.PRNGKey(0))
params0, static = eqx.partition(model0, eqx.is_array)
def f(params, opt_state, x, y):
    def loss(p):
        m = eqx.combine(p, static)
        return jnp.mean((jax.vmap(m)(x) - y) ** 2)
    l, g = jax.value_and_grad(loss)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return l, eqx.apply_updates(params, upd), opt_state
def get_inputs():
    return [params0, tx.init(params0), jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16)),
            jax.random.normal(jax.random.PRNGKey(2), (BATCH, 4))]
