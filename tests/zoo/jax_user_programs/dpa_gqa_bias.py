# ruff: noqa: E731  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp

BATCH = 2
SEQ = 16
def f(q, k, v, bias):
    mask = jnp.tril(jnp.ones((SEQ, SEQ), bool))[None, None]
    return jax.nn.dot_product_attention(q, k, v, bias=bias, mask=mask)
def get_inputs():
    r = lambda i, h: jax.random.normal(jax.random.PRNGKey(i), (BATCH, SEQ, h, 8))
    return [r(0, 4), r(1, 2), r(2, 2), jax.random.normal(jax.random.PRNGKey(3), (1, 4, SEQ, SEQ))]
