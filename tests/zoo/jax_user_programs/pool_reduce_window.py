# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def f(x):
    mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    av = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    mn = lax.reduce_window(x, jnp.inf, lax.min, (1, 2, 2, 1), (1, 1, 1, 1), ((0, 0), (1, 1), (1, 1), (0, 0)))
    return mx, av, mn
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(0), (2, 12, 12, 4))]
