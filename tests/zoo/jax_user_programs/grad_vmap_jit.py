# ruff: noqa: E501  (a user program, written as users write them)
"""Per-example gradients: jit(vmap(grad)), then their mean norm."""
from __future__ import annotations

import jax
import jax.numpy as jnp

BATCH = 8
def loss(w, x, y):
    return jnp.sum((jnp.tanh(x @ w["a"]) @ w["b"] - y) ** 2)
@jax.jit
def f(w, x, y):
    g = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, x, y)
    norms = jnp.sqrt(sum(jnp.sum(v.reshape(BATCH, -1) ** 2, axis=1) for v in jax.tree.leaves(g)))
    return g, norms
def get_inputs():
    k = jax.random.PRNGKey(0)
    w = {"a": jax.random.normal(k, (16, 32)), "b": jax.random.normal(k, (32, 4))}
    return [w, jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16)), jax.random.normal(jax.random.PRNGKey(2), (BATCH, 4))]
