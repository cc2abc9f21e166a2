# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import jax.numpy as jnp
import numpy as np


def f(x, idx, upd):
    a = jnp.take(x, idx, axis=1)
    b = x.at[idx].add(upd)
    c = x.at[idx, 0].set(1.0)
    d = x.at[:, 2:5].multiply(2.0)
    e = jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1)
    g = x[idx[:3], idx[3:6]]
    h = x.at[idx].max(upd)
    return a, b, c, d, e, g, h
def get_inputs():
    return [np.random.randn(16, 16).astype(np.float32), np.random.randint(0, 16, (8,)).astype(np.int32),
            np.random.randn(8, 16).astype(np.float32)]
