# ruff: noqa: E741  (a user program, written as users write them)
"""One AdamW step of an nnx MLP via nnx.Optimizer inside the split/merge functional API."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import nnx

BATCH = 8
class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(16, 32, rngs=rngs)
        self.l2 = nnx.Linear(32, 4, rngs=rngs)
    def __call__(self, x):
        return self.l2(nnx.relu(self.l1(x)))
tx = optax.adamw(1e-3, weight_decay=1e-2)
_model = MLP(nnx.Rngs(0))
graphdef, _ = nnx.split(_model)
def f(params, opt_state, x, y):
    def loss(p):
        m = nnx.merge(graphdef, p)
        return jnp.mean((m(x) - y) ** 2)
    l, g = jax.value_and_grad(loss)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return l, optax.apply_updates(params, upd), opt_state
def get_inputs():
    params = nnx.state(_model, nnx.Param)
    x = jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16))
    y = jax.random.normal(jax.random.PRNGKey(2), (BATCH, 4))
    return [params, tx.init(params), x, y]
