"""A transformer block (attention and MLP) written with ``jax.jit`` and ``NamedSharding``
on a 2 x 2 mesh, Megatron style: the batch over ``dp``, the attention heads and the MLP's
hidden units over ``tp`` (column-parallel QKV and up projections, row-parallel output
and down projections), so XLA gives each device one ``tp`` all-reduce after attention
and one after the MLP."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

WORLD_SIZE = 4
B, S, D, H, F = 4, 8, 32, 4, 64


def layer_norm(x):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5)


def attention(h, wqkv, wo):
    qkv = jnp.einsum("bsd,dte->tbse", h, wqkv)
    q, k, v = (qkv[i].reshape(B, S, H, D // H) for i in range(3))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(D // H)
    o = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)
    return o.reshape(B, S, D) @ wo


def block(x, wqkv, wo, w1, w2):
    x = x + attention(layer_norm(x), wqkv, wo)
    return x + jax.nn.gelu(layer_norm(x) @ w1) @ w2


def f(x, wqkv, wo, w1, w2):
    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((2, 2), ("dp", "tp"), axis_types=auto)

    def s(*spec):
        return NamedSharding(mesh, P(*spec))

    step = jax.jit(block, in_shardings=(s("dp"), s(None, None, "tp"), s("tp", None),
                                        s(None, "tp"), s("tp", None)), out_shardings=s("dp"))
    return step(x, wqkv, wo, w1, w2)


def get_inputs():
    rng = np.random.default_rng(0)

    def weight(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    x = rng.standard_normal((B, S, D)).astype(np.float32)
    return [x, weight(D, 3, D), weight(D, D), weight(D, F), weight(F, D)]
