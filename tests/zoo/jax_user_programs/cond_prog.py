# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp

BATCH = 8
def f(x, w):
    def big(x):
        return jnp.tanh(x @ w)
    def small(x):
        return jax.nn.relu(x) @ w * 0.5
    y = jax.lax.cond(jnp.sum(x) > 0, big, small, x)
    z = jax.lax.switch(jnp.argmax(jnp.sum(y, axis=0)) % 3, [jnp.sin, jnp.cos, jnp.exp], y)
    return z
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(0), (BATCH, 16)), jax.random.normal(jax.random.PRNGKey(1), (16, 16))]
