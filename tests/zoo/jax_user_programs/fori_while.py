
"""Power iteration with fori_loop, then a Newton sqrt with a static-count while_loop."""
from __future__ import annotations

import jax
import jax.numpy as jnp

N = 32
def f(a, v):
    def body(i, v):
        w = a @ v
        return w / jnp.linalg.norm(w)
    v = jax.lax.fori_loop(0, 10, body, v)
    lam = v @ (a @ v)
    def cond(s):
        return s[0] < 8
    def wbody(s):
        i, x = s
        return i + 1, 0.5 * (x + jnp.abs(lam) / x)
    _, r = jax.lax.while_loop(cond, wbody, (0, jnp.ones(())))
    return v, r
def get_inputs():
    a = jax.random.normal(jax.random.PRNGKey(0), (N, N))
    return [a + a.T, jax.random.normal(jax.random.PRNGKey(1), (N,))]
