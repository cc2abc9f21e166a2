
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

SEQ = 12
def f(cell, xs):
    def step(h, xt):
        h = cell(xt, h)
        return h, h
    h, hs = jax.lax.scan(step, jnp.zeros(cell.hidden_size), xs)
    return h, hs
def get_inputs():
    cell = eqx.nn.GRUCell(8, 16, key=jax.random.PRNGKey(0))
    return [cell, jax.random.normal(jax.random.PRNGKey(1), (SEQ, 8))]
