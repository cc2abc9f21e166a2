"""A training gradient of a small Flax CNN: ``jax.value_and_grad`` of a cross-entropy loss.

Forward: conv-relu-maxpool, grouped strided conv-relu-avgpool, dense. The backward pass
adds the transposed convolutions (input and weight gradients, ``batch_group_count`` for
the grouped one), the max-pool gradient (``select_and_scatter_add``) and a
``reshape`` with ``dimensions``. Outputs: the loss and the parameter gradients.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

N, H, W, C = 2, 12, 12, 2
CLASSES = 5


class CNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Conv(8, (3, 3), padding="SAME")(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.relu(nn.Conv(8, (3, 3), strides=(2, 2), padding="SAME", feature_group_count=2)(x))
        x = nn.avg_pool(x, (3, 3), strides=(3, 3))
        return nn.Dense(CLASSES)(x.reshape(x.shape[0], -1))


MODEL = CNN()


def f(params, x, labels):
    """``(loss, grads)`` for one batch."""

    def loss(p):
        logits = MODEL.apply(p, x)
        return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, CLASSES) * jax.nn.log_softmax(logits), -1))

    return jax.value_and_grad(loss)(params)


def get_inputs():
    x = np.random.default_rng(1).standard_normal((N, H, W, C), dtype=np.float32)
    params = MODEL.init(jax.random.PRNGKey(0), x)
    labels = np.arange(N, dtype=np.int32) % CLASSES
    return [jax.tree_util.tree_map(np.asarray, params), x, labels]
