# ruff: noqa: RUF059  (a user program, written as users write them)
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

SEQ = 12
BATCH = 4
def f(cell, head, xs):
    def run(x):
        def step(carry, xt):
            h, c = cell(xt, carry)
            return (h, c), h
        init = (jnp.zeros(cell.hidden_size), jnp.zeros(cell.hidden_size))
        (h, c), hs = jax.lax.scan(step, init, x)
        return head(h), hs
    return jax.vmap(run)(xs)
def get_inputs():
    cell = eqx.nn.LSTMCell(8, 16, key=jax.random.PRNGKey(0))
    head = eqx.nn.Linear(16, 4, key=jax.random.PRNGKey(2))
    return [cell, head, jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, 8))]
