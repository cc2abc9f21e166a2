"""A program that is already distributed (``world W``): its own collectives are bounded."""

from __future__ import annotations

import pytest

from solar.diagnostics import PlanError
from solar.distributed import DistributedRequest, bound_prepared, parse_parallel
from solar.einsum import lift_to_einsum
from solar.ir import parse_program, verify_program

TP_MLP = """solar-ir 1
program tp_mlp
world W = 8
size B = 4096
size D = 8192
size F = 4096
input X : bf16[B, D]
param W1 : bf16[D, F]
param W2 : bf16[F, D]
temp H : bf16[B, F]
temp P : bf16[B, D]
output Y : bf16[B, D]
kernel up {
  for b in 0 .. B {
    for f in 0 .. F {
      H[b, f] = 0.0
      for d in 0 .. D {
        H[b, f] += X[b, d] * W1[d, f]
      }
    }
  }
}
kernel down {
  for b in 0 .. B {
    for d in 0 .. D {
      P[b, d] = 0.0
      for f in 0 .. F {
        P[b, d] += H[b, f] * W2[f, d]
      }
    }
  }
}
kernel ar {
  Y = all_reduce(P, op=sum)
}
"""


def _bound(text: str, cluster: str, plan: str | None = None):  # type: ignore[no-untyped-def]
    program = parse_program(text)
    verify_program(program)
    sizes = {d.name: int(d.value.value) for d in program.sizes}  # type: ignore[attr-defined]
    req = DistributedRequest(cluster, parse_parallel(plan) if plan else None, 1, 1,
                             phase="prefill")
    return bound_prepared(program, lift_to_einsum(program), sizes, req, phase_of=None,
                          precision="default")


@pytest.mark.parametrize(("cluster", "factor", "bandwidth"), [
    ("DGX_H100", 1.0, 500e9),          # NVLS: each GPU sends its buffer once
    ("DGX_A100", 2 * 7 / 8, 325e9),    # point to point: 2(n-1)/n
])
def test_captured_all_reduce(cluster: str, factor: float, bandwidth: float) -> None:
    info = _bound(TP_MLP, cluster)
    (row,) = info.collectives
    size = 4096 * 8192 * 2
    assert (row.op, row.group_size, row.bytes_per_rank) == ("all_reduce", 8, size)
    assert row.time_s == pytest.approx(factor * size / bandwidth)
    assert info.plan.world == 8 and info.plan.label == "captured (world 8)"
    rank = info.ranks[0]
    assert info.step.time_s == max(rank.compute_s, rank.hbm_s, *rank.links_s.values())


def test_world_larger_than_the_cluster_is_e0803() -> None:
    with pytest.raises(PlanError) as err:
        _bound(TP_MLP.replace("world W = 8", "world W = 128"), "GB200_NVL72")
    assert err.value.code == "E0803"


def test_a_plan_for_a_distributed_program_is_e0806() -> None:
    with pytest.raises(PlanError) as err:
        _bound(TP_MLP, "DGX_H100", "tp=8")
    assert err.value.code == "E0806"


def test_no_plan_for_a_single_device_program_is_e0806() -> None:
    single = TP_MLP.replace("world W = 8\n", "").replace(
        "kernel ar {\n  Y = all_reduce(P, op=sum)\n}\n",
        "kernel ar {\n  for b in 0 .. B {\n    for d in 0 .. D {\n      Y[b, d] = P[b, d]\n"
        "    }\n  }\n}\n")
    with pytest.raises(PlanError) as err:
        _bound(single, "DGX_H100")
    assert err.value.code == "E0806"


@pytest.mark.torch
def test_a_captured_torch_distributed_program_is_bounded() -> None:
    pytest.importorskip("torch")
    from pathlib import Path

    from solar.frontends.pytorch.distributed import capture_distributed
    from solar.ir import resolve_sizes

    sample = Path(__file__).resolve().parents[2] / "samples" / "torch" / "dist_tp_mlp.py"
    program = capture_distributed(sample).program
    verify_program(program)
    req = DistributedRequest("DGX_A100", None, 1, 1, phase="prefill")
    info = bound_prepared(program, lift_to_einsum(program), resolve_sizes(program, {}), req,
                          phase_of=None, precision="default")
    (row,) = info.collectives
    size = 8 * 32 * 4  # the row-parallel output, f32[B, D]
    assert (row.op, row.group_size, row.bytes_per_rank) == ("all_reduce", 2, size)
    assert row.time_s == pytest.approx(size / 325e9)  # 2(2-1)/2 S over NVLink 3 + NIC
    assert info.plan.world == 2


@pytest.mark.torch
def test_solar_analyze_bounds_a_torch_distributed_file(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    from pathlib import Path

    from tests.cli_helpers import run_cli

    sample = Path(__file__).resolve().parents[2] / "samples" / "torch" / "dist_tp_mlp.py"
    r = run_cli(capsys, "analyze", str(sample), "--cluster", "DGX_H100", "--validate", "off",
                "-q", "--format", "json")
    assert r.code == 0, r.err
    import json

    d = json.loads(r.out)["distributed"]
    assert d["plan"]["label"] == "captured (world 2)"
    assert [(c["op"], c["group_size"]) for c in d["collectives"]] == [("all_reduce", 2)]
    assert d["step"]["time_s"] > 0
