# ruff: noqa: E741  (a user program, written as users write them)
"""AdamW step of a tiny causal LM (linen), with cross-entropy."""
from __future__ import annotations

import flax.linen as nn
import jax
import numpy as np
import optax

BATCH = 2
SEQ = 16
V = 64
class LM(nn.Module):
    @nn.compact
    def __call__(self, ids):
        emb = nn.Embed(V, 32)
        x = emb(ids)
        mask = nn.make_causal_mask(ids)
        h = nn.LayerNorm()(x)
        x = x + nn.SelfAttention(num_heads=4)(h, mask=mask)
        h = nn.LayerNorm()(x)
        x = x + nn.Dense(32)(nn.gelu(nn.Dense(64)(h)))
        return emb.attend(nn.LayerNorm()(x))
model = LM()
tx = optax.adamw(1e-3)
def f(params, opt_state, ids):
    def loss(p):
        logits = model.apply(p, ids[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, ids[:, 1:]).mean()
    l, g = jax.value_and_grad(loss)(params)
    upd, opt_state = tx.update(g, opt_state, params)
    return l, optax.apply_updates(params, upd), opt_state
def get_inputs():
    ids = np.random.randint(0, V, (BATCH, SEQ + 1)).astype(np.int32)
    params = model.init(jax.random.PRNGKey(0), ids[:, :-1])
    return [params, tx.init(params), ids]
