# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_grad_tanh(x):
    return jnp.tanh(x)
def _fwd(x):
    y = jnp.tanh(x)
    return y, y
def _bwd(y, g):
    return (jnp.clip(g * (1 - y * y), -1.0, 1.0),)
clip_grad_tanh.defvjp(_fwd, _bwd)
@jax.custom_jvp
def softclip(x):
    return jnp.log1p(jnp.exp(x)) - jnp.log1p(jnp.exp(x - 5.0))
@softclip.defjvp
def _softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softclip(x), (jax.nn.sigmoid(x) - jax.nn.sigmoid(x - 5.0)) * t
def f(w, x):
    def loss(w):
        h = x @ w
        return jnp.sum(clip_grad_tanh(h) + softclip(h) + jax.nn.relu(h) + jax.nn.gelu(h, approximate=False) + jax.nn.softplus(h))
    return jax.value_and_grad(loss)(w)
def get_inputs():
    return [jax.random.normal(jax.random.PRNGKey(0), (16, 16)), jax.random.normal(jax.random.PRNGKey(1), (8, 16))]
