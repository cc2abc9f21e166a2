"""A CNN training step in JAX with optax (twin of samples/torch/train_cnn_sgd.py).

Conv-ReLU, conv-ReLU, linear head, in PyTorch's layouts (NCHW input, OIHW weights,
``[out, in]`` head); loss = ``sum(output * target)``; ``jax.value_and_grad``, then
``optax.sgd``. Returns ``(loss, grads, new params)``, the values the PyTorch step returns.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

BATCH, CHANNELS, SIDE, CLASSES = 4, 8, 8, 10
IN_CHANNELS = 3
LR = 1e-2
OPT = optax.sgd(LR)


def conv(p, x):
    h = lax.conv_general_dilated(x, p["weight"], (1, 1), padding=((1, 1), (1, 1)))
    return jax.nn.relu(h + p["bias"].reshape(1, -1, 1, 1))


def model(params, x):
    h = conv(params["conv2"], conv(params["conv1"], x)).reshape(x.shape[0], -1)
    return jnp.einsum("bi,oi->bo", h, params["head"]["weight"]) + params["head"]["bias"]


def f(params, x, target):
    """One step: loss, gradients and the SGD-updated parameters."""
    loss, grads = jax.value_and_grad(lambda p: jnp.sum(model(p, x) * target))(params)
    updates, _ = OPT.update(grads, OPT.init(params), params)
    return loss, grads, optax.apply_updates(params, updates)


def get_inputs():
    rng = np.random.default_rng(0)

    def normal(shape, scale):
        return rng.standard_normal(shape, dtype=np.float32) * scale

    def layer(weight_shape, scale):
        return {"weight": normal(weight_shape, scale), "bias": normal(weight_shape[:1], 0.1)}

    params = {
        "conv1": layer((CHANNELS, IN_CHANNELS, 3, 3), 0.2),
        "conv2": layer((CHANNELS, CHANNELS, 3, 3), 0.2),
        "head": layer((CLASSES, CHANNELS * SIDE * SIDE), 0.02),
    }
    x = normal((BATCH, IN_CHANNELS, SIDE, SIDE), 1.0)
    return [params, x, normal((BATCH, CLASSES), 1.0)]
