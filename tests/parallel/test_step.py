"""The step bound end to end on a real PyTorch training step (samples/torch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.bounds import compile_costs, compute_bounds
from solar.distributed import DistributedRequest, bound_prepared, parse_parallel
from solar.hw import load_hardware_spec
from solar.pipeline import AnalyzeOptions, PreparedProgram, analyze, lift_source
from solar.report import DistributedInfo, render_text
from tests.cli_helpers import run_cli

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]
BLOCK = ROOT / "samples" / "torch" / "train_transformer_block.py"


@pytest.fixture(scope="module")
def step() -> PreparedProgram:
    return lift_source(BLOCK, AnalyzeOptions(validate="off", train=True, train_step=True))


def _bound(prepared: PreparedProgram, plan: str, *, cluster: str = "DGX_H100",
           micro: int = 2, global_batch: int = 16, **kw: object) -> DistributedInfo:
    req = DistributedRequest(cluster, parse_parallel(plan), micro, global_batch, **kw)  # type: ignore[arg-type]
    assert prepared.front.step is not None
    return bound_prepared(prepared.program, prepared.graph, prepared.sizes, req,
                          phase_of=prepared.front.step.phase_of, precision=prepared.precision,
                          size_constants=prepared.front.source_sizes)


def test_one_gpu_plan_is_the_single_device_compute(step: PreparedProgram) -> None:
    info = _bound(step, "tp=1,pp=1,dp=1", micro=2, global_batch=2)
    fused = compute_bounds(compile_costs(step.graph), load_hardware_spec("H100_SXM"),
                           model="fused", precision_policy=step.precision, sizes=step.sizes)
    # per-pipe times summed over kernels, then the unit rule: the fused model's compute
    assert info.ranks[0].compute_s == pytest.approx(fused.compute_time_s, rel=1e-12)
    assert info.collectives == ()
    assert info.step.time_s is not None and info.step.time_s >= info.ranks[0].compute_s


def test_structure_is_read_off_the_program(step: PreparedProgram) -> None:
    s = _bound(step, "tp=2,dp=4").structure
    assert (s.hidden, s.heads, s.tokens_per_micro_batch) == (64, 4, 32)
    assert s.tp_all_reduces_per_layer == 2  # attention and MLP
    assert s.replicated_kernels > 0         # the layer norms


def test_context_parallel_charges_the_k_v_gather(step: PreparedProgram) -> None:
    """Fused QKV (3 x 64 wide): K/V width 64, so min(2 kv, hidden) = 64 per token, / (cp
    tp); the ranks move (cp-1)/cp of it for the 32 tokens (Note [Context-parallel K/V])."""
    info = _bound(step, "tp=2,cp=2,dp=2")
    row, back = [c for c in info.collectives if c.axis == "cp"]
    itemsize = 4  # the sample's float32 activations
    assert (row.op, row.in_bound) == ("all_gather", True)
    assert row.bytes_per_rank == 32 * 64 * itemsize / (2 * 2)
    assert row.min_bytes_per_rank == pytest.approx(row.bytes_per_rank / 2)
    # the backward's dK/dV exchange: the same bytes the other way
    assert (back.op, back.phase, back.in_bound) == ("reduce_scatter", "backward", True)
    assert back.min_bytes_per_rank == row.min_bytes_per_rank


@pytest.mark.parametrize(("plan", "unsharded"), [
    ("tp=2,dp=4", "tp=1,dp=4"), ("tp=4,dp=2", "tp=1,dp=2"), ("tp=2,pp=2,dp=2", "tp=1,dp=2"),
    ("tp=2,dp=4,zero=3", "tp=1,dp=4,zero=3"),
])
def test_sharding_never_raises_a_rank_s_compute(step: PreparedProgram, plan: str,
                                                unsharded: str) -> None:
    """At the same micro-batches per rank (the same dp): with fewer replicas a rank runs
    more micro-batches, and its replicated norms' vector time grows with them."""
    base = _bound(step, unsharded).ranks[0].compute_s
    assert _bound(step, plan).ranks[0].compute_s <= base * (1 + 1e-9)


def test_step_is_the_max_over_resources_and_ranks(step: PreparedProgram) -> None:
    info = _bound(step, "tp=2,pp=2,dp=2,zero=1")
    for r in info.ranks:
        assert r.time_s == max(r.compute_s, r.hbm_s, *r.links_s.values())
    assert info.step.time_s == max(r.time_s for r in info.ranks)
    assert info.step.no_overlap_s >= info.step.time_s
    kinds = {(c.op, c.axis) for c in info.collectives}
    assert {("all_reduce", "tp"), ("send_recv", "pp"), ("reduce_scatter", "dp"),
            ("all_gather", "dp")} <= kinds


def test_full_recompute_never_lowers_the_bound(step: PreparedProgram) -> None:
    none = _bound(step, "tp=2,dp=4")
    full = _bound(step, "tp=2,dp=4", recompute="full")
    assert full.step.time_s is not None and none.step.time_s is not None
    assert full.step.time_s >= none.step.time_s


def test_an_infeasible_plan_has_no_bound(tmp_path: Path) -> None:
    device = (ROOT / "hardware_specs" / "h100_sxm.yaml").read_text()
    (tmp_path / "tiny.yaml").write_text(
        device.replace("name: H100_SXM", "name: Tiny").replace(
            "dram_capacity_bytes: 80.0e9", "dram_capacity_bytes: 1.0e8"))
    cluster = (ROOT / "hardware_specs" / "clusters" / "dgx_h100.yaml").read_text()
    (tmp_path / "c.yaml").write_text(
        cluster.replace("name: DGX_H100", "name: Tiny_DGX").replace(
            "device: H100_SXM", f"device: {tmp_path / 'tiny.yaml'}"))
    options = AnalyzeOptions(validate="off", train=True, train_step=True,
                             sizes={"DIM": 2048})
    prepared = lift_source(BLOCK, options)
    info = _bound(prepared, "tp=1,dp=2", cluster=str(tmp_path / "c.yaml"))
    assert not info.memory.feasible
    assert info.step.time_s is None and "infeasible" in info.step.binding
    assert _bound(prepared, "tp=4,dp=1", cluster=str(tmp_path / "c.yaml"),
                  micro=2, global_batch=2).memory.total_bytes < info.memory.total_bytes


def test_report_and_summary(tmp_path: Path) -> None:
    req = DistributedRequest("DGX_H100", parse_parallel("tp=2,pp=2,dp=2"), 2, 8)
    report = analyze(BLOCK, AnalyzeOptions(validate="off", train=True, train_step=True,
                                           distributed=req))
    assert report.distributed is not None and report.schema_version == "1.7"
    text = render_text(report)
    assert "distributed: tp=2,pp=2,dp=2 on DGX_H100" in text and "step >= " in text
    again = type(report).model_validate_json(report.to_json())
    assert again.to_json() == report.to_json()
    pytest.importorskip("matplotlib")
    from solar.report.plot import plot_report

    png = plot_report(report, tmp_path / "ranks.png")
    assert png.stat().st_size > 10_000


@pytest.mark.parametrize(("args", "code"), [
    (["--cluster", "DGX_H100", "--parallel", "tp=2", "--phase", "train"], "E0806"),
    (["--train", "--cluster", "DGX_H100", "--parallel", "tp=8"], "E0802"),
    (["--train", "--cluster", "DGX_H100", "--parallel", "tp=2,dp=3", "--global-batch", "8"],
     "E0801"),
    (["--train", "--cluster", "NOPE", "--parallel", "tp=2"], "E0405"),
])
def test_cli_errors(capsys: pytest.CaptureFixture[str], args: list[str], code: str) -> None:
    r = run_cli(capsys, "analyze", str(BLOCK), "--validate", "off", "-q", *args)
    assert r.code == 2
    assert f"error[{code}]" in r.err


def test_zero_on_nvls_loads_each_direction_once(step: PreparedProgram) -> None:
    """ZeRO-1 on one DGX H100 (NVLS): the reduce-scatter sends 3/4 S and receives S/4,
    the all-gather the reverse; the rank's injection link is busy S / bandwidth, not
    the 1.5 S the two rows' larger directions add to (Note [Directions])."""
    info = _bound(step, "tp=1,dp=4,zero=1", micro=2, global_batch=8)
    rs, ag = (next(c for c in info.collectives if c.op == op)
              for op in ("reduce_scatter", "all_gather"))
    assert rs.bytes_per_rank == ag.bytes_per_rank
    assert rs.time_s + ag.time_s == pytest.approx(1.5 * rs.bytes_per_rank / 500e9)
    assert info.ranks[0].links_s["injection"] == pytest.approx(rs.bytes_per_rank / 500e9)


@pytest.fixture(scope="module")
def forward() -> PreparedProgram:
    sizes = {"BATCH": 2, "SEQ": 64, "D_MODEL": 128, "HEADS": 4}
    return lift_source(ROOT / "samples" / "torch" / "gpt_block.py",
                       AnalyzeOptions(validate="off", sizes=sizes))


def _infer(prepared: PreparedProgram, plan: str, phase: str) -> DistributedInfo:
    req = DistributedRequest("DGX_H100", parse_parallel(plan), 2, 8, phase=phase)  # type: ignore[arg-type]
    return bound_prepared(prepared.program, prepared.graph, prepared.sizes, req,
                          phase_of=None, precision=prepared.precision,
                          size_constants=prepared.front.source_sizes)


def test_decode_is_one_token_per_sequence_after_a_kv_cache(forward: PreparedProgram) -> None:
    """Note [Decode step]: from the 64-token forward, a decode step does 1/64 of each
    kernel's work, reads the rank's parameters and KV cache, and all-reduces one
    token per sequence per TP point."""
    pre, dec = (_infer(forward, "tp=2,dp=4", ph) for ph in ("prefill", "decode"))
    assert dec.ranks[0].compute_s == pytest.approx(pre.ranks[0].compute_s / 64)
    assert dec.structure.tokens_per_micro_batch == 2
    assert pre.structure.tokens_per_micro_batch == 2 * 64
    (ar_pre,), (ar_dec,) = ([c for c in d.collectives if c.axis == "tp"] for d in (pre, dec))
    assert ar_dec.bytes_per_rank == pytest.approx(ar_pre.bytes_per_rank / 64)
    assert ar_dec.count_per_step == ar_pre.count_per_step
    params = dec.memory.parameter_bytes  # the rank's share, tp=2
    cache = 2 * 1 * (2 * 64) * 128 * 4 / 2   # K and V, 1 layer, 128 tokens, f32, / tp
    assert dec.memory.activation_bytes == pytest.approx(cache)
    assert dec.ranks[0].hbm_s == pytest.approx((params + cache) / 3.35e12)
    assert any(a.startswith("decode: one new token") for a in dec.assumptions)
    assert dec.step.tokens_per_s_ceiling == pytest.approx(8 / dec.step.time_s)  # type: ignore[operator]


def test_expert_parallelism_on_a_dense_model_is_said(forward: PreparedProgram) -> None:
    info = _infer(forward, "tp=1,dp=4,ep=2", "prefill")
    assert any("no experts" in a for a in info.assumptions)
