# ruff: noqa: E741  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

BATCH = 16
tx = optax.sgd(1e-2, momentum=0.9, nesterov=True)
def model(p, x):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]
def f(params, opt_state, x, labels):
    def loss(p):
        logits = model(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    l, g = jax.value_and_grad(loss)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return l, optax.apply_updates(params, upd), opt_state
def get_inputs():
    import numpy as np
    k = jax.random.PRNGKey(0)
    p = {"w1": jax.random.normal(k, (16, 32)) * 0.1, "b1": jnp.zeros(32),
         "w2": jax.random.normal(k, (32, 5)) * 0.1, "b2": jnp.zeros(5)}
    x = jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16))
    return [p, tx.init(p), x, np.random.randint(0, 5, (BATCH,)).astype(np.int32)]
