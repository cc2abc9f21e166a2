"""A DQN-style Flax policy on stacked uint8 frames: the observation is read as bytes.

``obs.astype(float32) / 255`` feeds two strided convolutions and a dense head (Q-values
for 6 actions). uint8 is stored in the IR as int8 bits, so the bound reads 1 byte per
pixel, as the real program does.
"""

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

BATCH, SIZE, FRAMES, ACTIONS = 2, 36, 4, 6


class Model(nn.Module):
    @nn.compact
    def __call__(self, obs):
        x = obs.astype(jnp.float32) / 255.0
        x = nn.relu(nn.Conv(16, (8, 8), strides=(4, 4))(x))
        x = nn.relu(nn.Conv(32, (4, 4), strides=(2, 2))(x))
        x = x.reshape(x.shape[0], -1)
        return nn.Dense(ACTIONS)(nn.relu(nn.Dense(64)(x)))


def get_inputs():
    rng = np.random.default_rng(1)
    return [rng.integers(0, 256, (BATCH, SIZE, SIZE, FRAMES)).astype(np.uint8)]
