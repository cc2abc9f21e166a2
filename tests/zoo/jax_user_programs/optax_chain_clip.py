# ruff: noqa: E501, E741  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

BATCH = 16
sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 100)
tx = optax.chain(optax.clip_by_global_norm(1.0), optax.scale_by_adam(), optax.add_decayed_weights(1e-4),
                 optax.scale_by_schedule(sched), optax.scale(-1.0))
def f(params, opt_state, x, y):
    def loss(p):
        return jnp.mean(optax.l2_loss(jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"], y))
    l, g = jax.value_and_grad(loss)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return l, optax.apply_updates(params, upd), opt_state
def get_inputs():
    k = jax.random.PRNGKey(0)
    p = {"w1": jax.random.normal(k, (16, 32)) * 0.1, "b1": jnp.zeros(32),
         "w2": jax.random.normal(k, (32, 4)) * 0.1}
    return [p, tx.init(p), jax.random.normal(jax.random.PRNGKey(1), (BATCH, 16)),
            jax.random.normal(jax.random.PRNGKey(2), (BATCH, 4))]
