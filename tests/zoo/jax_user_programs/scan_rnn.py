# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp

SEQ = 20
BATCH = 4
def rnn_cell(p, h, x):
    return jnp.tanh(x @ p["wx"] + h @ p["wh"] + p["b"])
def f(p, xs):
    def step(h, x):
        h = rnn_cell(p, h, x)
        return h, h @ p["wo"]
    h0 = jnp.zeros((BATCH, 16))
    h, ys = jax.lax.scan(step, h0, jnp.swapaxes(xs, 0, 1))
    return h, ys
def get_inputs():
    k = jax.random.PRNGKey(0)
    p = {"wx": jax.random.normal(k, (8, 16)) * 0.3, "wh": jax.random.normal(jax.random.fold_in(k, 1), (16, 16)) * 0.3,
         "b": jnp.zeros(16), "wo": jax.random.normal(jax.random.fold_in(k, 2), (16, 3))}
    return [p, jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, 8))]
