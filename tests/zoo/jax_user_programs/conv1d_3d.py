# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import flax.linen as nn
import jax


class Model(nn.Module):
    @nn.compact
    def __call__(self, x, v):
        a = nn.Conv(8, (5,), kernel_dilation=2, feature_group_count=4, padding="CAUSAL")(x)
        b = nn.Conv(4, (3, 3, 3), strides=(1, 2, 2))(v)
        c = nn.ConvTranspose(4, (3, 3), strides=(2, 2))(v[:, 0])
        return a, b, c
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(0), (2, 32, 8)), jax.random.normal(jax.random.PRNGKey(1), (2, 4, 8, 8, 2))]
