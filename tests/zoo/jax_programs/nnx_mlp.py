"""A flax.nnx MLP (16 -> 32 -> 4) with ReLU, built as `Model(rngs=nnx.Rngs(0))`."""
from __future__ import annotations

import jax
from flax import nnx

BATCH = 8


class Model(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(16, 32, rngs=rngs)
        self.l2 = nnx.Linear(32, 4, rngs=rngs)

    def __call__(self, x):
        return self.l2(jax.nn.relu(self.l1(x)))


def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16))]
