"""A small Flax (linen) CNN on NHWC images: conv-relu-maxpool, strided conv-relu-avgpool, dense."""

import flax.linen as nn
import numpy as np

N, H, W, C = 2, 16, 16, 3
CLASSES = 10


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(8, (3, 3), padding="SAME")(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(16, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))(x))
        x = nn.avg_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape(x.shape[0], -1)
        return nn.Dense(CLASSES)(x)


def get_inputs():
    return [np.random.default_rng(1).standard_normal((N, H, W, C), dtype=np.float32)]
