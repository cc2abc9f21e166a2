"""Parity sample (JAX side of samples/torch/parity_matmul.py): ``y = x W^T + b``.

The weight keeps PyTorch's ``[out, in]`` layout and is contracted with ``einsum`` (one
``dot_general``, no transpose), so both frontends emit the same two kernels.
"""

import flax.linen as nn
import numpy as np
import jax.numpy as jnp

BATCH = 8
IN = 32
OUT = 16


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        w = self.param("weight", nn.initializers.normal(0.1), (OUT, IN))
        b = self.param("bias", nn.initializers.normal(0.1), (OUT,))
        return jnp.einsum("bi,oi->bo", x, w) + b


def get_inputs():
    return [np.random.default_rng(1).standard_normal((BATCH, IN), dtype=np.float32)]
