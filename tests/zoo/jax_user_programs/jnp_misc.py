# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp


def f(x, y):
    a = jnp.where(x > 0, x, 0.1 * x)
    b = jnp.clip(x, -1, 1) ** 3
    c = jnp.linalg.norm(x, axis=-1, keepdims=True)
    d = jnp.concatenate([x, y], axis=-1)
    e = jnp.pad(x, ((1, 1), (2, 0)), mode="reflect")
    g = jnp.roll(x, 3, axis=1)
    h = jnp.var(x, axis=0) + jnp.std(y)
    i = jnp.maximum(jnp.max(x, axis=1), jnp.min(y, axis=1))
    k = jnp.tril(x @ x.T)
    m = jnp.argmax(y, axis=-1)
    return a, b, c, d, e, g, h, i, k, m
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(0), (8, 16)), jax.random.normal(jax.random.PRNGKey(1), (8, 16))]
