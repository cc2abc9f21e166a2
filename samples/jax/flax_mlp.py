"""A Flax (linen) MLP classifier: Dense-GELU-Dense-GELU-Dense, softmax probabilities."""

import flax.linen as nn
import numpy as np

# realistic widths; SOLAR validates the IR at reduced sizes (`--set` rebinds them)
BATCH, IN, HIDDEN, CLASSES = 256, 1024, 4096, 1000


class Model(nn.Module):
    hidden: int = HIDDEN
    classes: int = CLASSES

    @nn.compact
    def __call__(self, x):
        x = nn.gelu(nn.Dense(self.hidden)(x))
        x = nn.gelu(nn.Dense(self.hidden)(x))
        logits = nn.Dense(self.classes)(x)
        return logits, nn.softmax(logits, axis=-1)


def get_inputs():
    return [np.random.default_rng(1).standard_normal((BATCH, IN), dtype=np.float32)]


def get_init_inputs():
    return [HIDDEN, CLASSES]
