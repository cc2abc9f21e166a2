# ruff: noqa: E501, E741, B905  (a user program, written as users write them)
"""value_and_grad of a 4-layer MLP whose layers are jax.checkpoint'ed; SGD update."""
from __future__ import annotations

import jax
import jax.numpy as jnp

BATCH = 8
@jax.checkpoint
def layer(w, b, x):
    return jax.nn.gelu(x @ w + b)
def f(ws, bs, x, y):
    def loss(ws, bs):
        h = x
        for w, b in zip(ws, bs):
            h = layer(w, b, h)
        return jnp.mean((h - y) ** 2)
    l, (gw, gb) = jax.value_and_grad(loss, argnums=(0, 1))(ws, bs)
    return l, [w - 0.1 * g for w, g in zip(ws, gw)], [b - 0.1 * g for b, g in zip(bs, gb)]
def get_inputs():
    k = jax.random.PRNGKey(0)
    ws = [jax.random.normal(jax.random.fold_in(k, i), (32, 32)) * 0.2 for i in range(4)]
    bs = [jnp.zeros(32) for _ in range(4)]
    return [ws, bs, jax.random.normal(jax.random.PRNGKey(1), (BATCH, 32)), jax.random.normal(jax.random.PRNGKey(2), (BATCH, 32))]
