# ruff: noqa: E731  (a user program, written as users write them)
from __future__ import annotations

import jax

BATCH = 2
SEQ = 16
def f(q, k, v):
    a = jax.nn.dot_product_attention(q, k, v, is_causal=True)
    b = jax.nn.dot_product_attention(q, k, v, scale=0.3)
    return a, b
def get_inputs():
    r = lambda i: jax.random.normal(jax.random.PRNGKey(i), (BATCH, SEQ, 4, 8))
    return [r(0), r(1), r(2)]
