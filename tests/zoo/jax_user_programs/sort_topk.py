# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp


def f(x, w):
    s = x @ w
    srt = jnp.sort(s, axis=-1)
    idx = jnp.argsort(-s, axis=-1)
    vals, top = jax.lax.top_k(s, 4)
    return srt, idx, jax.nn.softmax(vals), top
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(0), (8, 32)), jax.random.normal(jax.random.PRNGKey(1), (32, 32))]
