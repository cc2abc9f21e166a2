
from __future__ import annotations

import flax.linen as nn
import jax

BATCH = 4
class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.Conv(8, (3, 3))(x)
        x = nn.relu(x)
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.Conv(16, (3, 3), strides=2, padding="VALID")(x)
        x = nn.relu(x)
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(10)(x)
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16, 16, 3))]
