"""A training step in JAX/Flax with optax: small CNN (conv, ReLU, max pool, dense),
cross-entropy, SGD with momentum (the JAX side of samples/torch/train_cnn.py, without
batch norm)."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

BATCH, SIDE, CHANNELS, CLASSES = 8, 16, 16, 10
OPT = optax.sgd(0.1, momentum=0.9)


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(CHANNELS, (3, 3), padding="SAME")(x))
        x = nn.max_pool(nn.relu(nn.Conv(CHANNELS, (3, 3), padding="SAME")(x)), (2, 2), (2, 2))
        return nn.Dense(CLASSES)(x.reshape(x.shape[0], -1))


MODEL = CNN()


def f(params, opt_state, x, labels):
    """One step: forward, loss, backward, SGD-momentum update."""

    def loss(p):
        logits = MODEL.apply(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

    value, grads = jax.value_and_grad(loss)(params)
    updates, opt_state = OPT.update(grads, opt_state, params)
    return value, grads, optax.apply_updates(params, updates), opt_state


def get_inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIDE, SIDE, 3), dtype=np.float32)
    params = jax.tree_util.tree_map(np.asarray, MODEL.init(jax.random.PRNGKey(0), x))
    opt_state = jax.tree_util.tree_map(np.asarray, OPT.init(params))
    labels = rng.integers(0, CLASSES, BATCH).astype(np.int32)
    return [params, opt_state, x, labels]
