"""An equinox MLP (16 -> 32 -> 32 -> 4), vmapped over a batch; the model is an input pytree."""
from __future__ import annotations

import equinox as eqx
import jax

BATCH = 8


def f(model, x):
    return jax.vmap(model)(x)


def get_inputs():
    model = eqx.nn.MLP(in_size=16, out_size=4, width_size=32, depth=2, key=jax.random.PRNGKey(0))
    return [model, jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16))]
