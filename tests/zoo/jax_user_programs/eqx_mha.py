
from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

BATCH = 2
SEQ = 16
def f(mha, ln, x):
    mask = jnp.tril(jnp.ones((SEQ, SEQ), dtype=bool))
    def one(xi):
        h = jax.vmap(ln)(xi)
        return xi + mha(h, h, h, mask=mask)
    return jax.vmap(one)(x)
def get_inputs():
    mha = eqx.nn.MultiheadAttention(num_heads=4, query_size=32, key=jax.random.PRNGKey(0))
    ln = eqx.nn.LayerNorm(32)
    return [mha, ln, jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, 32))]
