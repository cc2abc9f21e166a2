
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

BATCH = 2
SEQ = 16
class Block(nn.Module):
    d: int = 32
    @nn.compact
    def __call__(self, x):
        mask = nn.make_causal_mask(jnp.ones(x.shape[:2]))
        h = nn.LayerNorm()(x)
        h = nn.MultiHeadDotProductAttention(num_heads=4, qkv_features=self.d)(h, h, mask=mask)
        x = x + h
        h = nn.LayerNorm()(x)
        h = nn.Dense(4 * self.d)(h)
        h = nn.gelu(h)
        h = nn.Dense(self.d)(h)
        return x + h
class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = Block()(x)
        x = Block()(x)
        return x
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, 32))]
