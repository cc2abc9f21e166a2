"""``jit`` with ``NamedSharding`` (no shard_map) end to end: captured per rank from XLA's
partitioned HLO, analysed with a cluster, and validated against the real jit program on
four host devices (also with a transposed device order, where partition ids and device
ids differ), plus the coded error for an HLO op without a replay."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from cli_helpers import run_cli

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.distributed import capture_on_host_devices, validate_on_host_devices
from solar.ir import collectives

pytest.importorskip("jax")
pytestmark = pytest.mark.jax

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "jax" / "dist_jit_mlp.py"


def test_sample_analyzes_with_a_cluster(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = run_cli(capsys, "analyze", str(SAMPLE), "--cluster", "DGX_H100", "-q",
                     "-o", str(report))
    assert result.code == 0, result.err  # validation runs on host devices (below)
    data = json.loads(report.read_text())
    assert "per-device HLO of the jit" in data["frontend"]["captured_with"]
    assert data["coverage"]["complete"]
    got = [(c["op"], c["axis"], c["bytes_per_rank"]) for c in data["distributed"]["collectives"]]
    # the forward's tp all-reduce of (B/dp) x D, the loss's dp all-reduce of a scalar and
    # the two weight gradients' dp all-reduces of D x F/tp = 16 x 16 f32 each
    assert got == [("all_reduce", "g2s1", 256.0), ("all_reduce", "g2s2", 4.0),
                   ("all_reduce", "g2s2", 1024.0), ("all_reduce", "g2s2", 1024.0)]
    sources = {k["name"]: k.get("source") for k in data["archs"][0]["kernels"]}
    assert sources["dot_general"] == "dist_jit_mlp.py:19"  # x @ w1 in loss_fn
    assert data["distributed"]["step"]["time_s"] > 0


def test_sample_matches_the_real_jit_on_four_host_devices() -> None:
    check = validate_on_host_devices(SAMPLE)
    assert check.via == "jit" and check.world == 4
    assert check.mesh == (("dp", 2), ("tp", 2))
    assert check.replay_error == 0.0
    assert set(check.max_abs_error) == {"y0", "y1", "y2"}  # loss and both updated weights
    assert max(check.max_abs_error.values()) < 1e-5


TRANSPOSED = """
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

WORLD_SIZE = 4

def f(x, w):
    devices = np.array(jax.devices()[:4]).reshape(2, 2).T  # device 1 at mesh position 2
    mesh = Mesh(devices, ("dp", "tp"))
    s = lambda *spec: NamedSharding(mesh, P(*spec))
    g = jax.jit(lambda x, w: (jnp.tanh(x @ w), x * 2),
                in_shardings=(s("dp", "tp"), s("tp", None)),
                out_shardings=(s("dp", None), s(None, "tp")))  # all-reduce, all-gather
    return g(x, w)

def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((8, 16)).astype(np.float32),
            rng.standard_normal((16, 8)).astype(np.float32)]
"""


def test_transposed_device_order_matches_the_real_run(tmp_path: Path) -> None:
    path = tmp_path / "transposed.py"
    path.write_text(textwrap.dedent(TRANSPOSED))
    check = validate_on_host_devices(path)
    assert check.via == "jit" and check.replay_error == 0.0
    assert max(check.max_abs_error.values()) < 1e-5


STYLES = {
    # shardings only as constraints inside the function: XLA propagates them
    "constraints": """
        def f(x, w):
            x = jax.lax.with_sharding_constraint(x, s("dp", None))
            w = jax.lax.with_sharding_constraint(w, s(None, "tp"))
            return jax.lax.with_sharding_constraint(jnp.tanh(x @ w).sum(1), s("dp"))
    """,
    # work outside the jitted, sharded call
    "outer_ops": """
        def f(x, w):
            g = jax.jit(lambda x, w: jnp.tanh(x @ w), in_shardings=(s("dp", None),
                        s(None, "tp")), out_shardings=s("dp", "tp"))
            return g(x * 2, w) + 1.0
    """,
    # a partition-dependent constant: XLA slices it by partition-id through u32 tables
    "partition_offsets": """
        def f(x, w):
            g = jax.jit(lambda x, w: jnp.tanh(x @ w) + jnp.arange(8.0),
                        in_shardings=(s("dp", "tp"), s("tp", None)), out_shardings=s("dp", "tp"))
            return g(x, w)
    """,
    # a sharded scan: its body's all-gather stays uncovered (a collective in a loop
    # body), so the loop's real value per rank is tapped from the device program
    "scan": """
        def f(x, w):
            def g(x, w):
                body = lambda c, _: (jnp.tanh(c @ w @ w.T / 4), None)  # noqa: E731
                return jax.lax.scan(body, x, None, length=3)[0]
            return jax.jit(g, in_shardings=(s("dp", None), s(None, "tp")),
                           out_shardings=s("dp", None))(x, w)
    """,
    # bf16 matmul, f32 gelu and sum: compared at the bf16 policy tolerance
    "bf16": """
        def f(x, w):
            def g(x, w):
                h = x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16)
                return jax.nn.gelu(h.astype(jnp.float32)).sum()
            return jax.jit(g, in_shardings=(s(None, "tp"), s("tp", None)),
                           out_shardings=s())(x, w)
    """,
}
PRELUDE = """
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

WORLD_SIZE = 4
mesh = jax.make_mesh((2, 2), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

def s(*spec):
    return NamedSharding(mesh, P(*spec))

def get_inputs():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((8, 16)).astype(np.float32),
            rng.standard_normal((16, 8)).astype(np.float32)]
"""


@pytest.mark.parametrize("style", sorted(STYLES))
def test_program_styles_match_the_real_run(tmp_path: Path, style: str) -> None:
    path = tmp_path / f"{style}.py"
    path.write_text(textwrap.dedent(PRELUDE) + textwrap.dedent(STYLES[style]))
    check = validate_on_host_devices(path)
    assert check.via == "jit" and check.replay_error == 0.0
    assert max(check.max_abs_error.values()) < (0.1 if style == "bf16" else 1e-5)


def test_an_hlo_op_without_replay_is_e0571(tmp_path: Path) -> None:
    path = tmp_path / "cumsum.py"
    path.write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jax.sharding import NamedSharding, PartitionSpec as P

        WORLD_SIZE = 2

        def f(x):
            mesh = jax.make_mesh((2,), ("dp",), axis_types=(jax.sharding.AxisType.Auto,))
            s = NamedSharding(mesh, P("dp"))
            return jax.jit(lambda x: jnp.cumsum(x, 1), in_shardings=s, out_shardings=s)(x)

        def get_inputs():
            return [np.ones((4, 8), np.float32)]
    """))
    with pytest.raises(FrontendError) as err:
        capture_on_host_devices(path)
    assert err.value.code == "E0571"
    assert "`reduce-window`" in err.value.message and "cumsum.py:" in err.value.message


def test_a_mesh_smaller_than_the_world_is_e0557(tmp_path: Path) -> None:
    path = tmp_path / "small_mesh.py"
    path.write_text(textwrap.dedent(PRELUDE).replace(
        'mesh = jax.make_mesh((2, 2), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)',
        'mesh = jax.make_mesh((2,), ("dp",), axis_types=(jax.sharding.AxisType.Auto,),\n'
        '                     devices=jax.devices()[:2])') + textwrap.dedent("""
        def f(x, w):
            return jax.jit(lambda x, w: x @ w, in_shardings=(s("dp"), s()),
                           out_shardings=s("dp"))(x, w)
    """))
    with pytest.raises(FrontendError) as err:
        capture_on_host_devices(path)
    assert err.value.code == "E0557"
    assert "the mesh has 2 devices but the file sets WORLD_SIZE = 4" in err.value.message


def test_megatron_transformer_block_matches_the_real_run() -> None:
    path = SAMPLE.with_name("dist_jit_transformer.py")
    host = capture_on_host_devices(path)
    assert host.via == "jit" and host.coverage == ()
    # one tp all-reduce after attention, one after the MLP (B/dp x S x D f32 each)
    assert [(c.kind, c.group) for c in collectives(host.program)] == [
        ("all_reduce", "g2s1"), ("all_reduce", "g2s1")]
    check = validate_on_host_devices(path)
    assert check.replay_error == 0.0 and check.max_abs_error["y0"] < 1e-5
