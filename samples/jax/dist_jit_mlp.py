"""A data- and tensor-parallel MLP training step written with ``jax.jit`` and
``NamedSharding`` on a 2 x 2 mesh (no shard_map): the batch is split over ``dp``, the
hidden units over ``tp`` (column- then row-parallel weights), and XLA's SPMD
partitioner decides each device's program and its collectives (the ``tp`` all-reduce
of the forward, the ``dp`` reductions of the loss and the gradients)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

WORLD_SIZE = 4
B, D, F = 8, 16, 32
LR = 0.1


def loss_fn(w1, w2, x, y):
    h = jnp.tanh(x @ w1)
    return jnp.mean((h @ w2 - y) ** 2)


def train_step(w1, w2, x, y):
    loss, (g1, g2) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w1, w2, x, y)
    return loss, w1 - LR * g1, w2 - LR * g2


def f(w1, w2, x, y):
    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((2, 2), ("dp", "tp"), axis_types=auto)

    def s(*spec):
        return NamedSharding(mesh, P(*spec))

    col, row, batch = s(None, "tp"), s("tp", None), s("dp", None)
    step = jax.jit(train_step, in_shardings=(col, row, batch, batch),
                   out_shardings=(s(), col, row))
    return step(w1, w2, x, y)


def get_inputs():
    rng = np.random.default_rng(0)
    return [
        (rng.standard_normal((D, F)) / np.sqrt(D)).astype(np.float32),
        (rng.standard_normal((F, D)) / np.sqrt(F)).astype(np.float32),
        rng.standard_normal((B, D)).astype(np.float32),
        rng.standard_normal((B, D)).astype(np.float32),
    ]
