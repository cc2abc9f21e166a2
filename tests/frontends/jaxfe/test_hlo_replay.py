"""Replaying partitioned HLO as lax calls: the replayed per-device function equals the
compiled program on every device (sharded jit programs on 4 forced host devices, in a
subprocess: hlo_cases.py), collectives map to the right mesh axes (also on a mesh whose
device order is transposed), and an opcode without a replay is a coded error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe.hlo_mesh import mesh_axes_of
from solar.frontends.jaxfe.hlo_parse import parse_hlo
from solar.frontends.jaxfe.hlo_replay import mapped_opcodes, replay_entry

pytest.importorskip("jax")
pytestmark = pytest.mark.jax

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def run_cases(tmp: Path, *extra: str) -> dict[str, Any]:
    out = tmp / "cases.json"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT),
           "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    done = subprocess.run([sys.executable, str(HERE / "hlo_cases.py"), str(out), *extra],
                          env=env, capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_cases(tmp_path_factory.mktemp("hlo"))


EXPECTED = [
    ("mlp", [["all-reduce", ["tp"]]]),
    ("train", [["all-reduce", ["tp"]], ["all-reduce", ["dp"]], ["all-reduce", ["dp"]],
               ["all-reduce", ["dp"]]]),
    # the device order is transposed: partition p is still mesh position p, not device p
    ("train_transposed", [["all-reduce", ["tp"]], ["all-reduce", ["dp"]],
                          ["all-reduce", ["dp"]], ["all-reduce", ["dp"]]]),
    ("reshard_transposed", [["collective-permute", []], ["collective-permute", []]]),
    ("all_to_all", [["all-to-all", ["dp"]]]),
    ("reduce_scatter", [["all-reduce", ["tp"]], ["collective-permute", []]]),
    ("gather_3d_mesh", [["all-gather", ["a"]], ["all-reduce", ["c"]]]),
    ("scan", [["all-gather", ["dp"]], ["all-reduce", ["tp"]]]),
    ("cond", [["all-reduce", ["tp"]], ["all-reduce", ["dp"]]]),
]


@pytest.mark.parametrize(("name", "collectives"), EXPECTED)
def test_replay_equals_the_compiled_program(
    cases: dict[str, Any], name: str, collectives: list[Any]
) -> None:
    case = cases[name]
    assert case.get("code") is None, case
    assert case["error"] == 0.0  # bitwise: the same ops in the same order
    assert case["collectives"] == collectives


@pytest.mark.parametrize(("name", "opcode"), [("gather", "gather"), ("scatter_add", "scatter"),
                                              ("conv", "convolution"), ("sort", "sort")])
def test_replay_of_ops_with_dimension_numbers(cases: dict[str, Any], name: str,
                                              opcode: str) -> None:
    case = cases[name]
    assert case.get("code") is None, case
    assert opcode in case["ops"] and case["error"] == 0.0


def test_replay_covers_the_ops_of_resharding(cases: dict[str, Any]) -> None:
    case = cases["misc"]
    assert case["error"] == 0.0
    assert {"pad", "concatenate", "slice", "dynamic-slice", "iota", "partition-id", "select",
            "all-to-all", "all-gather", "collective-permute"} <= set(case["ops"])
    assert set(case["ops"]) <= mapped_opcodes()


def test_an_opcode_without_replay_is_e0571_naming_it(cases: dict[str, Any]) -> None:
    case = cases["cumsum"]  # XLA writes jnp.cumsum as a reduce-window
    assert case["code"] == "E0571"
    assert "`reduce-window`" in case["message"] and "hlo_cases.py:" in case["message"]


def test_replay_matches_on_random_shardings(tmp_path: Path) -> None:
    """Property: for MLPs with random input and output shardings on a 2 x 2 mesh (either
    device order), whatever collectives XLA picks, the replay equals the compiled program
    on every device."""
    results = run_cases(tmp_path, "7", "8")
    assert len(results) == 8
    for name, case in results.items():
        assert case.get("code") is None, (name, case)
        assert case["error"] == 0.0, name


MESH = [("dp", 2), ("tp", 2)]
AXES = [
    ([[0, 1], [2, 3]], True, ("tp",)),
    ([[0, 2], [1, 3]], True, ("dp",)),
    ([[0, 1, 2, 3]], True, ("dp", "tp")),
    ([[0, 2, 1, 3]], True, ("tp", "dp")),
    ([[0, 2, 1, 3]], False, ("dp", "tp")),
    ([[0], [1], [2], [3]], True, ()),
]


@pytest.mark.parametrize(("groups", "ordered", "axes"), AXES)
def test_mesh_axes_of_groups(groups: list[list[int]], ordered: bool,
                             axes: tuple[str, ...]) -> None:
    assert mesh_axes_of(groups, MESH, ordered=ordered) == axes


def test_groups_that_are_no_mesh_axes_are_e0551() -> None:
    with pytest.raises(FrontendError) as err:
        mesh_axes_of([[0, 3], [1, 2]], MESH, ordered=False)
    assert err.value.code == "E0551"


ONE_DEVICE = """HloModule m, num_partitions=1

%region (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

ENTRY %main (x: f32[4,8], w: f32[8,3]) -> (f32[4,3], f32[4]) {
  %x = f32[4,8]{1,0} parameter(0)
  %w = f32[8,3]{1,0} parameter(1)
  %dot = f32[4,3]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %two = f32[] constant(2)
  %b = f32[4,3]{1,0} broadcast(%two), dimensions={}
  %t = f32[4,3]{1,0} tanh(%dot)
  %y = f32[4,3]{1,0} multiply(%t, %b)
  %ninf = f32[] constant(-inf)
  %r = f32[4]{0} reduce(%x, %ninf), dimensions={1}, to_apply=%region
  %dead = f32[4,3]{1,0} OPCODE(%y)
  ROOT %out = (f32[4,3]{1,0}, f32[4]{0}) tuple(%y, %r)
}
"""


def test_replay_of_plain_ops_matches_numpy() -> None:
    module = parse_hlo(ONE_DEVICE.replace("OPCODE", "custom-call"))  # dead: not replayed
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 8), np.float32), rng.standard_normal((8, 3), np.float32)
    y, r = replay_entry(module, [("x", 1)])(x, w)
    np.testing.assert_allclose(np.asarray(y), np.tanh(x @ w) * 2, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(r), x.max(axis=1))


@pytest.mark.parametrize("opcode", ["custom-call", "reduce-window", "rng-bit-generator", "fft"])
def test_a_live_unmapped_opcode_is_e0571(opcode: str) -> None:
    text = ONE_DEVICE.replace("OPCODE", opcode).replace("tuple(%y, %r)", "tuple(%dead, %r)")
    x, w = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    with pytest.raises(FrontendError) as err:
        replay_entry(parse_hlo(text), [("x", 1)])(x, w)
    assert err.value.code == "E0571"
    assert f"`{opcode}`" in err.value.message and "%dead" in err.value.message


MALFORMED = [
    # an operand defined after its use
    (ONE_DEVICE.replace("%t = f32[4,3]{1,0} tanh(%dot)", "%t = f32[4,3]{1,0} tanh(%late)")
     .replace("%dead = f32[4,3]{1,0} OPCODE(%y)", "%late = f32[4,3]{1,0} copy(%dot)"),
     "before it is defined"),
    # a reduction naming no computation
    (ONE_DEVICE.replace("to_apply=%region", "to_apply=%nowhere"), "names no computation"),
    # a parameter number beyond the arguments
    (ONE_DEVICE.replace("parameter(1)\n  %dot", "parameter(7)\n  %dot"), "out of range"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_hlo_is_e0570(text: str, message: str) -> None:
    x, w = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    with pytest.raises(FrontendError) as err:
        replay_entry(parse_hlo(text.replace("OPCODE", "copy")), [("x", 1)])(x, w)
    assert err.value.code == "E0570" and message in err.value.message
