"""Parity sample (JAX side of samples/torch/parity_attention.py): single-head attention with ops.

Projections contract PyTorch-layout ``[out, in]`` weights with ``einsum`` (no transposes);
softmax is written out (max, subtract, exp, sum, divide) as on the PyTorch side.
"""

import flax.linen as nn
import numpy as np
import jax.numpy as jnp

B, S, D = 2, 16, 32
SCALE = D**-0.5


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        init = nn.initializers.normal(0.1)
        wq = self.param("wq", init, (D, D))
        wk = self.param("wk", init, (D, D))
        wv = self.param("wv", init, (D, D))
        wo = self.param("wo", init, (D, D))
        q = jnp.einsum("bsd,ed->bse", x, wq)
        k = jnp.einsum("bsd,ed->bse", x, wk)
        v = jnp.einsum("bsd,ed->bse", x, wv)
        s = jnp.einsum("bqe,bke->bqk", q, k) * SCALE
        m = jnp.max(s, axis=-1, keepdims=True)
        e = jnp.exp(s - m)
        p = e / jnp.sum(e, axis=-1, keepdims=True)
        o = jnp.einsum("bqk,bke->bqe", p, v)
        return jnp.einsum("bse,de->bsd", o, wo)


def get_inputs():
    return [np.random.default_rng(1).standard_normal((B, S, D), dtype=np.float32)]
