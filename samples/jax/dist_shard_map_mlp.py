"""A tensor- and data-parallel MLP written with ``shard_map`` on a 2 x 2 mesh: the
batch is split over ``dp``, the hidden units over ``tp`` (column- then row-parallel
weights), so each device ends with a ``psum`` over ``tp``."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

WORLD_SIZE = 4
B, D, F = 8, 16, 32


def f(x, w1, w2):
    auto = (jax.sharding.AxisType.Auto,) * 2  # inputs arrive unsharded; shard_map splits them
    mesh = jax.make_mesh((2, 2), ("dp", "tp"), axis_types=auto)

    def local(x, w1, w2):
        h = jax.nn.relu(x @ w1)
        return jax.lax.psum(h @ w2, "tp")

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P("dp", None), P(None, "tp"), P("tp", None)),
        out_specs=P("dp", None),
    )(x, w1, w2)


def get_inputs():
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((B, D)).astype(np.float32),
        rng.standard_normal((D, F)).astype(np.float32),
        rng.standard_normal((F, D)).astype(np.float32),
    ]
