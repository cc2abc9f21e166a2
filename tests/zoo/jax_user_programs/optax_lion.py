# ruff: noqa: E741  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

BATCH = 16
tx = optax.lion(1e-4, weight_decay=1e-3)
def f(params, opt_state, x, y):
    def loss(p):
        return jnp.mean((jax.nn.gelu(x @ p["w1"]) @ p["w2"] - y) ** 2)
    l, g = jax.value_and_grad(loss)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return l, optax.apply_updates(params, upd), opt_state
def get_inputs():
    k = jax.random.PRNGKey(0)
    p = {"w1": jax.random.normal(k, (16, 32)) * 0.1, "w2": jax.random.normal(k, (32, 4)) * 0.1}
    return [p, tx.init(p), jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16)),
            jax.random.normal(jax.random.PRNGKey(2), (BATCH, 4))]
