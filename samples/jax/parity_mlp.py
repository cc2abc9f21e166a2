"""Parity sample (JAX side of samples/torch/parity_mlp.py): Linear-ReLU-Linear-Tanh-Linear."""

import flax.linen as nn
import jax
import numpy as np
import jax.numpy as jnp

BATCH, IN, HIDDEN, OUT = 8, 32, 64, 10


class Linear(nn.Module):
    """``x W^T + b`` with a PyTorch-layout ``[out, in]`` weight."""

    features_in: int
    features_out: int

    @nn.compact
    def __call__(self, x):
        w = self.param("weight", nn.initializers.normal(0.1), (self.features_out, self.features_in))
        b = self.param("bias", nn.initializers.normal(0.1), (self.features_out,))
        return jnp.einsum("bi,oi->bo", x, w) + b


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = jax.nn.relu(Linear(IN, HIDDEN, name="fc1")(x))
        h = jnp.tanh(Linear(HIDDEN, HIDDEN, name="fc2")(h))
        return Linear(HIDDEN, OUT, name="fc3")(h)


def get_inputs():
    return [np.random.default_rng(1).standard_normal((BATCH, IN), dtype=np.float32)]
