"""A training step in JAX with optax (twin of samples/torch/train_mlp_sgd.py).

Forward ``Linear-ReLU-Linear`` (PyTorch ``[out, in]`` weight layout), loss = ``sum(output *
target)``, ``jax.value_and_grad``, then ``optax.sgd``. Returns ``(loss, grads, new
params)``: the same values a PyTorch step returns (its gradients and updated
parameters), so both frontends bound the same work.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

BATCH, IN, HIDDEN, OUT = 32, 64, 128, 10
LR = 1e-3
OPT = optax.sgd(LR)


def model(params, x):
    h = jax.nn.relu(jnp.einsum("bi,oi->bo", x, params["fc1"]["weight"]) + params["fc1"]["bias"])
    return jnp.einsum("bi,oi->bo", h, params["fc2"]["weight"]) + params["fc2"]["bias"]


def f(params, x, target):
    """One step: loss, gradients and the SGD-updated parameters."""
    loss, grads = jax.value_and_grad(lambda p: jnp.sum(model(p, x) * target))(params)
    updates, _ = OPT.update(grads, OPT.init(params), params)
    return loss, grads, optax.apply_updates(params, updates)


def get_inputs():
    rng = np.random.default_rng(0)
    params = {
        "fc1": {
            "weight": rng.standard_normal((HIDDEN, IN), dtype=np.float32) * 0.1,
            "bias": rng.standard_normal((HIDDEN,), dtype=np.float32) * 0.1,
        },
        "fc2": {
            "weight": rng.standard_normal((OUT, HIDDEN), dtype=np.float32) * 0.1,
            "bias": rng.standard_normal((OUT,), dtype=np.float32) * 0.1,
        },
    }
    x = rng.standard_normal((BATCH, IN), dtype=np.float32)
    return [params, x, rng.standard_normal((BATCH, OUT), dtype=np.float32)]
