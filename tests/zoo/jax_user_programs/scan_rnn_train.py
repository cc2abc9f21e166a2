# ruff: noqa: E501, E741  (a user program, written as users write them)
"""BPTT through lax.scan: grad of the RNN loss and an SGD update."""
from __future__ import annotations

import jax
import jax.numpy as jnp

SEQ = 10
BATCH = 4
def f(p, xs, y):
    def loss(p):
        def step(h, x):
            return jnp.tanh(x @ p["wx"] + h @ p["wh"]), None
        h, _ = jax.lax.scan(step, jnp.zeros((BATCH, 16)), jnp.swapaxes(xs, 0, 1))
        return jnp.mean((h @ p["wo"] - y) ** 2)
    l, g = jax.value_and_grad(loss)(p)
    return l, jax.tree.map(lambda a, b: a - 0.1 * b, p, g)
def get_inputs():
    k = jax.random.PRNGKey(0)
    p = {"wx": jax.random.normal(k, (8, 16)) * 0.3, "wh": jax.random.normal(jax.random.fold_in(k, 1), (16, 16)) * 0.3,
         "wo": jax.random.normal(jax.random.fold_in(k, 2), (16, 3))}
    return [p, jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, 8)), jax.random.normal(jax.random.PRNGKey(2), (BATCH, 3))]
