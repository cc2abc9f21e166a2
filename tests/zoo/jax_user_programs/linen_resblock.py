
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

BATCH = 4
class Block(nn.Module):
    ch: int
    @nn.compact
    def __call__(self, x):
        r = x
        y = nn.Conv(self.ch, (3, 3), use_bias=False)(x)
        y = nn.BatchNorm(use_running_average=True)(y)
        y = nn.relu(y)
        y = nn.Conv(self.ch, (3, 3), use_bias=False)(y)
        y = nn.BatchNorm(use_running_average=True)(y)
        return nn.relu(y + r)
class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(16, (3, 3))(x)
        x = Block(16)(x)
        x = Block(16)(x)
        return jnp.mean(x, axis=(1, 2))
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, 8, 8, 3))]
