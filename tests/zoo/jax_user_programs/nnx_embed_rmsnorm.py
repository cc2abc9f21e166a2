
from __future__ import annotations

import numpy as np
from flax import nnx

BATCH = 2
SEQ = 16
class Model(nnx.Module):
    def __init__(self, rngs):
        self.emb = nnx.Embed(100, 32, rngs=rngs)
        self.norm = nnx.RMSNorm(32, rngs=rngs)
        self.fc = nnx.Linear(32, 32, rngs=rngs)
    def __call__(self, ids):
        x = self.norm(self.emb(ids))
        x = nnx.swish(self.fc(x))
        return self.emb.attend(x)
def get_inputs():
    return [np.random.randint(0, 100, (BATCH, SEQ)).astype(np.int32)]
