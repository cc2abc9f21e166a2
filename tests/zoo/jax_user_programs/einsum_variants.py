# ruff: noqa: E731  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp


def f(a, b, c, m, v):
    r1 = jnp.einsum("bij,bjk->bik", a, b)
    r2 = jnp.einsum("bhqd,bhkd->bhqk", c, c)
    r3 = jnp.einsum("ii->", m)
    r4 = jnp.einsum("i,j->ij", v, v)
    r5 = jnp.einsum("bi,ij,bj->b", a[:, 0], m[:8, :8], a[:, 1])
    r6 = jnp.einsum("ii->i", m)
    r7 = jnp.einsum("...ij->...ji", a).sum()
    return r1, r2, r3, r4, r5, r6, r7
def get_inputs():
    k = lambda i: jax.random.PRNGKey(i)
    return [jax.random.normal(k(0), (4, 8, 8)), jax.random.normal(k(1), (4, 8, 6)),
            jax.random.normal(k(2), (2, 4, 16, 8)), jax.random.normal(k(3), (12, 12)),
            jax.random.normal(k(4), (10,))]
