
from __future__ import annotations

import flax.linen as nn

BATCH = 2
SEQ = 16
class Model(nn.Module):
    @nn.compact
    def __call__(self, ids):
        emb = nn.Embed(100, 32)
        x = emb(ids)
        x = nn.RMSNorm()(x)
        x = nn.Dense(32)(x)
        x = nn.Dropout(0.1, deterministic=True)(x)
        x = nn.RMSNorm()(x)
        return emb.attend(x)
def get_inputs():
    import numpy as np
    return [np.random.randint(0, 100, (BATCH, SEQ)).astype(np.int32)]
