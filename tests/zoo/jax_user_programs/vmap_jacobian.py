
from __future__ import annotations

import jax
import jax.numpy as jnp


def net(p, x):
    return jnp.sin(p["w"] @ x + p["b"])
def f(p, xs):
    jac = jax.vmap(jax.jacrev(net, argnums=1), in_axes=(None, 0))(p, xs)
    hvp = jax.jvp(jax.grad(lambda x: jnp.sum(net(p, x) ** 2)), (xs[0],), (jnp.ones_like(xs[0]),))[1]
    return jac, hvp
def get_inputs():
    return [{"w": jax.random.normal(jax.random.PRNGKey(0), (6, 6)), "b": jnp.zeros(6)},
            jax.random.normal(jax.random.PRNGKey(1), (4, 6))]
