
from __future__ import annotations

import jax
from flax import nnx

BATCH = 4
class Model(nnx.Module):
    def __init__(self, rngs):
        self.c1 = nnx.Conv(3, 8, (3, 3), rngs=rngs)
        self.bn = nnx.BatchNorm(8, use_running_average=True, rngs=rngs)
        self.c2 = nnx.Conv(8, 16, (3, 3), strides=2, rngs=rngs)
        self.fc = nnx.Linear(16 * 4 * 4, 10, rngs=rngs)
    def __call__(self, x):
        x = nnx.relu(self.bn(self.c1(x)))
        x = nnx.max_pool(x, (2, 2), strides=(2, 2))
        x = nnx.relu(self.c2(x))
        x = x.reshape(x.shape[0], -1)
        return self.fc(x)
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16, 16, 3))]
