"""A training step in JAX/Flax with optax: pre-norm transformer block (attention + GELU
MLP), MSE loss against a target, AdamW (the JAX side of
samples/torch/train_transformer_block.py)."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

BATCH, SEQ, DIM, HEADS = 2, 16, 64, 4
OPT = optax.adamw(3e-4, weight_decay=0.1)


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        b, s, d = x.shape
        q, k, v = jnp.split(nn.Dense(3 * d, use_bias=False)(nn.LayerNorm()(x)), 3, axis=-1)
        q, k, v = (t.reshape(b, s, HEADS, d // HEADS).transpose(0, 2, 1, 3) for t in (q, k, v))
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / (d // HEADS) ** 0.5, axis=-1)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
        x = x + nn.Dense(d)(y)
        return x + nn.Dense(d)(nn.gelu(nn.Dense(4 * d)(nn.LayerNorm()(x)), approximate=False))


MODEL = Block()


def f(params, opt_state, x, target):
    """One step: forward, loss, backward, AdamW update."""

    def loss(p):
        return jnp.mean((MODEL.apply(p, x) - target) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    updates, opt_state = OPT.update(grads, opt_state, params)
    return value, grads, optax.apply_updates(params, updates), opt_state


def get_inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SEQ, DIM), dtype=np.float32)
    params = jax.tree_util.tree_map(np.asarray, MODEL.init(jax.random.PRNGKey(0), x))
    opt_state = jax.tree_util.tree_map(np.asarray, OPT.init(params))
    return [params, opt_state, x, rng.standard_normal((BATCH, SEQ, DIM), dtype=np.float32)]
