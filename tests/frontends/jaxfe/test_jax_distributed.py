"""shard_map programs: captured per device on forced host devices (a subprocess, so the
device count is set before JAX initialises) and validated against the real run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.distributed import (
    capture_on_host_devices,
    validate_on_host_devices,
)
from solar.ir import collectives, verify_program

pytest.importorskip("jax")
pytestmark = pytest.mark.jax

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "jax"


def test_shard_map_mlp_matches_four_host_devices() -> None:
    check = validate_on_host_devices(SAMPLES / "dist_shard_map_mlp.py")
    assert check.world == 4 and check.mesh == (("dp", 2), ("tp", 2))
    assert check.sizes == {"WORLD_SIZE": 4, "B": 8, "D": 16, "F": 32}
    assert check.max_abs_error["y0"] < 1e-4


def test_every_collective_matches_four_host_devices() -> None:
    host = capture_on_host_devices(SAMPLES / "dist_collectives.py")
    assert host.world == 4 and host.coverage == () and host.ops_seen > 0
    program = host.program
    verify_program(program)
    got = [(c.kind, c.group, c.groups) for c in collectives(program)]
    dp, tp = ((0, 2), (1, 3)), ((0, 1), (2, 3))
    assert got == [
        ("all_gather", "g2s2", dp),
        ("reduce_scatter", "g2s2", dp),
        ("permute", None, ((0, 1, 2, 3),)),
        ("all_to_all", "g2s1", tp),
    ]
    assert collectives(program)[2].pairs == ((0, 1), (1, 0), (2, 3), (3, 2))
    check = validate_on_host_devices(SAMPLES / "dist_collectives.py")
    assert check.max_abs_error["y0"] < 1e-4


def test_a_program_that_is_not_one_shard_map_is_e0557(tmp_path: Path) -> None:
    path = tmp_path / "plain.py"
    path.write_text(
        "import jax.numpy as jnp\nimport numpy as np\nWORLD_SIZE = 2\n"
        "def f(x):\n    return jnp.tanh(x) * 2.0\n"
        "def get_inputs():\n    return [np.ones((4, 4), np.float32)]\n"
    )
    with pytest.raises(FrontendError) as err:
        capture_on_host_devices(path)
    assert err.value.code == "E0557"


def test_jit_with_named_sharding_is_captured_from_the_partitioned_hlo(tmp_path: Path) -> None:
    path = tmp_path / "named.py"
    path.write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax.sharding import NamedSharding, PartitionSpec as P

        WORLD_SIZE = 2

        def f(x, w):
            mesh = jax.make_mesh((2,), ("tp",), axis_types=(jax.sharding.AxisType.Auto,))
            split = (NamedSharding(mesh, P(None, "tp")), NamedSharding(mesh, P("tp", None)))
            g = jax.jit(lambda x, w: jnp.tanh(x @ w), in_shardings=split,
                        out_shardings=NamedSharding(mesh, P()))
            return g(x, w)

        def get_inputs():
            return [np.ones((8, 16), np.float32), np.ones((16, 4), np.float32)]
    """))
    host = capture_on_host_devices(path)  # jit path: samples/jax/dist_jit_mlp.py, test_hlo_*
    assert host.via == "jit"
    assert [(c.kind, c.group) for c in collectives(host.program)] == [("all_reduce", None)]
