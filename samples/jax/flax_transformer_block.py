"""A pre-norm Flax (linen) transformer block with causal multi-head self-attention.

LayerNorm -> causal MultiHeadDotProductAttention (mask from ``nn.make_causal_mask``) ->
residual -> LayerNorm -> GELU MLP -> residual.
"""

import flax.linen as nn
import numpy as np

# realistic widths; SOLAR validates the IR at reduced sizes (`--set` rebinds them)
BATCH, SEQ, DIM, HEADS = 8, 1024, 1024, 16


class Model(nn.Module):
    dim: int = DIM
    heads: int = HEADS

    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        mask = nn.make_causal_mask(x[..., 0])
        h = nn.MultiHeadDotProductAttention(num_heads=self.heads, qkv_features=self.dim)(
            h, h, mask=mask
        )
        x = x + h
        h = nn.LayerNorm()(x)
        h = nn.Dense(4 * self.dim)(h)
        h = nn.Dense(self.dim)(nn.gelu(h))
        return x + h


def get_inputs():
    return [np.random.default_rng(1).standard_normal((BATCH, SEQ, DIM), dtype=np.float32)]
