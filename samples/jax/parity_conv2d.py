"""Parity sample (JAX side of samples/torch/parity_conv2d.py): 3x3 conv, stride 2, pad 1, bias.

NCHW input and OIHW weight, PyTorch's layouts (lax's default dimension numbers), so the
convolution kernel and the bias-add kernel match the PyTorch frontend's.
"""

import flax.linen as nn
import numpy as np
from jax import lax

N, C, H, W = 2, 3, 12, 12
K = 8


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        w = self.param("weight", nn.initializers.normal(0.2), (K, C, 3, 3))
        b = self.param("bias", nn.initializers.normal(0.2), (K,))
        y = lax.conv_general_dilated(x, w, window_strides=(2, 2), padding=((1, 1), (1, 1)))
        return y + b.reshape(1, K, 1, 1)


def get_inputs():
    return [np.random.default_rng(1).standard_normal((N, C, H, W), dtype=np.float32)]
