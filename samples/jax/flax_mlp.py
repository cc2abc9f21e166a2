"""A Flax (linen) MLP classifier: Dense-GELU-Dense-GELU-Dense, softmax probabilities."""

import flax.linen as nn
import jax

BATCH, IN, HIDDEN, CLASSES = 8, 32, 64, 10


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
    return [jax.random.normal(jax.random.PRNGKey(1), (BATCH, IN))]


def get_init_inputs():
    return [HIDDEN, CLASSES]
