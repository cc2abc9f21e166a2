"""A training step in JAX/Flax with optax: MLP, cross-entropy, AdamW (the JAX side of
samples/torch/train_mlp.py). Returns ``(loss, grads, new params, new optimizer state)``."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

BATCH, D_IN, HIDDEN, CLASSES = 32, 64, 128, 10
MODEL = None
OPT = optax.adamw(1e-3, weight_decay=0.01)


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(CLASSES)(nn.relu(nn.Dense(HIDDEN)(x)))


MODEL = MLP()


def f(params, opt_state, x, labels):
    """One step: forward, loss, backward, AdamW update."""

    def loss(p):
        logits = MODEL.apply(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    value, grads = jax.value_and_grad(loss)(params)
    updates, opt_state = OPT.update(grads, opt_state, params)
    return value, grads, optax.apply_updates(params, updates), opt_state


def get_inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, D_IN), dtype=np.float32)
    params = jax.tree_util.tree_map(np.asarray, MODEL.init(jax.random.PRNGKey(0), x))
    opt_state = jax.tree_util.tree_map(np.asarray, OPT.init(params))
    labels = rng.integers(0, CLASSES, BATCH).astype(np.int32)
    return [params, opt_state, x, labels]
