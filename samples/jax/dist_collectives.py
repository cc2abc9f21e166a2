"""Every shard_map collective on a 2 x 2 mesh: all_gather and psum_scatter over ``dp``,
a ppermute ring and an all_to_all over ``tp``, and each device's ``axis_index``."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

WORLD_SIZE = 4
N, D = 8, 8


def f(x):
    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((2, 2), ("dp", "tp"), axis_types=auto)

    def local(x):
        g = jax.lax.all_gather(jnp.tanh(x), "dp", axis=0, tiled=True)
        s = jax.lax.psum_scatter(g * 2.0, "dp", scatter_dimension=0, tiled=True)
        r = jax.lax.ppermute(s + 1.0, "tp", perm=[(0, 1), (1, 0)])
        a = jax.lax.all_to_all(r * r, "tp", 0, 1, tiled=True)
        return a + jax.lax.axis_index("tp").astype(jnp.float32)

    return jax.shard_map(local, mesh=mesh, in_specs=P("dp", "tp"), out_specs=P("dp", "tp"),
                         check_vma=False)(x)


def get_inputs():
    return [np.random.default_rng(0).standard_normal((N, D)).astype(np.float32)]
