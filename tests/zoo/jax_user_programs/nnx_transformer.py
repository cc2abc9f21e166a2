
from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

BATCH = 2
SEQ = 16
D = 32
class Model(nnx.Module):
    def __init__(self, rngs):
        self.ln1 = nnx.LayerNorm(D, rngs=rngs)
        self.attn = nnx.MultiHeadAttention(num_heads=4, in_features=D, decode=False, rngs=rngs)
        self.ln2 = nnx.LayerNorm(D, rngs=rngs)
        self.fc1 = nnx.Linear(D, 4 * D, rngs=rngs)
        self.fc2 = nnx.Linear(4 * D, D, rngs=rngs)
        self.drop = nnx.Dropout(0.1, deterministic=True, rngs=rngs)
    def __call__(self, x):
        mask = nnx.make_causal_mask(jnp.ones(x.shape[:2]))
        x = x + self.drop(self.attn(self.ln1(x), mask=mask))
        return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, SEQ, D))]
