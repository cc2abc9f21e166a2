"""Sharded ``jit`` programs whose partitioned HLO is replayed, run on 4 forced host
devices: ``python hlo_cases.py OUT.json [SEED N]`` (test_hlo_replay.py starts it with
``XLA_FLAGS=--xla_force_host_platform_device_count=4``, so JAX sees the devices).

Each case records the largest difference between the replayed per-device function
and the compiled program on every device (`solar.frontends.jaxfe.hlo_jit.replay_error`),
the collectives XLA chose (opcode, the mesh axes the replay mapped them to), or the
coded error the capture raised."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")  # collected for doctests too (--doctest-modules)
jnp = jax.numpy
Mesh, NamedSharding, P = jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec

from solar.diagnostics import SolarError  # noqa: E402
from solar.frontends.jaxfe.hlo_jit import device_blocks, jit_device_program, replay_error  # noqa: E402
from solar.frontends.jaxfe.hlo_mesh import mesh_axes_of  # noqa: E402
from solar.frontends.jaxfe.hlo_parse import replica_groups  # noqa: E402

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
               "collective-permute")


def _mesh(shape: tuple[int, ...], names: tuple[str, ...], transposed: bool = False) -> Mesh:
    devices = np.array(jax.devices()[: int(np.prod(shape))])
    grid = devices.reshape(shape[::-1]).T if transposed else devices.reshape(shape)
    return Mesh(grid, names)


def _collectives(program: Any) -> list[list[Any]]:
    out = []
    for comp in program.module.computations.values():
        for i in comp.instructions:
            if i.opcode in COLLECTIVES and i.opcode != "collective-permute":
                groups = replica_groups(i.attrs.get("replica_groups"), 4)
                axes = mesh_axes_of(groups, program.mesh, ordered=i.opcode != "all-reduce")
                out.append([i.opcode, list(axes)])
            elif i.opcode == "collective-permute":
                out.append([i.opcode, []])
    return out


def run_case(fn: Callable[..., Any], mesh: Mesh, args: list[np.ndarray],
             in_specs: tuple[P, ...], out_specs: Any) -> dict[str, Any]:
    shard = lambda spec: NamedSharding(mesh, spec)  # noqa: E731
    outs = jax.tree.map(shard, out_specs, is_leaf=lambda x: isinstance(x, P))
    jitted = jax.jit(fn, in_shardings=tuple(shard(s) for s in in_specs), out_shardings=outs,
                     keep_unused=True)
    try:
        program = jit_device_program(jitted, args, mesh.size)
        ins, real = device_blocks(program, args)
        return {"error": replay_error(program, ins, real), "collectives": _collectives(program),
                "ops": sorted({i.opcode for c in program.module.computations.values()
                               for i in c.instructions})}
    except SolarError as err:
        return {"code": err.code, "message": err.message}


def _mlp(x: Any, w1: Any, w2: Any) -> Any:
    return jnp.tanh(x @ w1) @ w2


def _train(w1: Any, w2: Any, x: Any, y: Any) -> Any:
    def loss(w1: Any, w2: Any) -> Any:
        return jnp.mean((_mlp(x, w1, w2) - y) ** 2)

    value, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2)
    return value, w1 - 0.1 * g1, w2 - 0.1 * g2


def _scan(x: Any) -> Any:
    def body(c: Any, _: Any) -> Any:
        return jnp.tanh(c @ c.T), None

    return jax.lax.scan(body, x, None, length=3)[0]


def _misc(x: Any) -> Any:
    return (jnp.pad(x, ((1, 1), (0, 2))), jnp.concatenate([x, x], 0), x[1:5:2],
            jnp.max(x), x.astype(jnp.bfloat16).astype(jnp.float32) * 2,
            jnp.where(x > 0.3, x, 0.0), jnp.argmax(x, 1), jnp.exp(-jnp.abs(x)))


def _cases() -> dict[str, Callable[[], dict[str, Any]]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    w1 = rng.standard_normal((16, 32)).astype(np.float32)
    w2 = rng.standard_normal((32, 16)).astype(np.float32)
    sq = rng.standard_normal((8, 8)).astype(np.float32) / 4
    idx = rng.integers(0, 16, (4, 6)).astype(np.int32)
    img = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)
    kernel = rng.standard_normal((3, 3, 3, 8)).astype(np.float32)
    m22 = _mesh((2, 2), ("dp", "tp"))
    t22 = _mesh((2, 2), ("dp", "tp"), transposed=True)
    m212 = _mesh((2, 1, 2), ("a", "b", "c"))
    return {
        "mlp": lambda: run_case(_mlp, m22, [a, w1, w2],
                                (P("dp", None), P(None, "tp"), P("tp", None)), P("dp", None)),
        "train": lambda: run_case(_train, m22, [w1, w2, a, a],
                                  (P(None, "tp"), P("tp", None), P("dp", None), P("dp", None)),
                                  (P(), P(None, "tp"), P("tp", None))),
        "train_transposed": lambda: run_case(
            _train, t22, [w1, w2, a, a],
            (P(None, "tp"), P("tp", None), P("dp", None), P("dp", None)),
            (P(), P(None, "tp"), P("tp", None))),
        "reshard_transposed": lambda: run_case(
            lambda x: (x * 2, jnp.roll(x, 1, 0)), t22, [sq], (P("dp", "tp"),),
            (P("tp", "dp"), P("dp", "tp"))),
        "all_to_all": lambda: run_case(lambda x: jnp.sin(x), m22, [sq], (P("dp", None),),
                                       P(None, "dp")),
        "reduce_scatter": lambda: run_case(lambda x, w: x @ w, m22, [a, w1],
                                           (P(None, "tp"), P("tp", None)), P("tp", None)),
        "gather_3d_mesh": lambda: run_case(lambda x, w: jnp.tanh(x @ w), m212, [a, w1],
                                           (P("a", "c"), P("c", None)), P(None, "a")),
        "scan": lambda: run_case(_scan, m22, [sq], (P("dp", "tp"),), P("dp", "tp")),
        "cond": lambda: run_case(
            lambda x: jax.lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: v - 1, x),
            m22, [sq], (P("dp", "tp"),), P("dp", "tp")),
        "misc": lambda: run_case(_misc, m22, [sq], (P("dp", "tp"),), P()),
        "gather": lambda: run_case(lambda e, i: e[i], m22, [w1, idx],
                                   (P(None, "tp"), P("dp", None)), P("dp", None, "tp")),
        "scatter_add": lambda: run_case(lambda x, i, u: x.at[i].add(u), m22,
                                        [w1, idx[0], w1[:6]],
                                        (P(None, "tp"), P(), P(None, "tp")), P(None, "tp")),
        "conv": lambda: run_case(
            lambda x, w: jax.lax.conv_general_dilated(
                x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
            m22, [img, kernel], (P("dp"), P(None, None, None, "tp")), P("dp", None, None, "tp")),
        "sort": lambda: run_case(lambda x: (jnp.sort(x, axis=1), jnp.argsort(x, axis=0)), m22,
                                 [sq], (P("dp", "tp"),), (P("dp"), P(None, "tp"))),
        "cumsum": lambda: run_case(lambda x: jnp.cumsum(x, 0), m22, [sq], (P("dp", "tp"),),
                                   P("dp", "tp")),
    }


_SPECS = (P(), P("dp"), P("tp"), P(None, "dp"), P(None, "tp"), P("dp", "tp"), P("tp", "dp"),
          P(("dp", "tp")), P(None, ("dp", "tp")), P(("tp", "dp")))


def random_cases(seed: int, n: int) -> dict[str, Callable[[], dict[str, Any]]]:
    """``n`` MLPs with random shardings of the inputs and the output on a 2 x 2 mesh
    (normal or transposed device order): XLA picks the collectives."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    w1 = rng.standard_normal((16, 8)).astype(np.float32)
    w2 = rng.standard_normal((8, 16)).astype(np.float32)
    out: dict[str, Callable[[], dict[str, Any]]] = {}
    for k in range(n):
        specs = tuple(_SPECS[int(j)] for j in rng.integers(0, len(_SPECS), 4))
        mesh = _mesh((2, 2), ("dp", "tp"), transposed=bool(rng.integers(0, 2)))
        out[f"random{k}:{specs}"] = functools_partial(mesh, specs, a, w1, w2)
    return out


def functools_partial(mesh: Mesh, specs: tuple[P, ...], *args: np.ndarray) -> Callable[
        [], dict[str, Any]]:
    return lambda: run_case(_mlp, mesh, list(args), specs[:3], specs[3])


if __name__ == "__main__":
    cases = random_cases(int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else _cases()
    results = {name: case() for name, case in cases.items()}
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(results, f)
