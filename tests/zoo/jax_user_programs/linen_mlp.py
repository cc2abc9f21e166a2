
from __future__ import annotations

import flax.linen as nn
import jax

BATCH = 8
class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Dense(64)(x)
        x = nn.gelu(x)
        x = nn.Dense(32)(x)
        x = nn.silu(x)
        return nn.Dense(10)(x)
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, 32))]
