"""MoE expert loads (`solar.distributed.moe`): placements, all-to-all, bad loads, and the
report section on a captured MoE training step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.diagnostics import PlanError
from solar.distributed.moe import (
    ExpertLoad,
    MoeSetup,
    bound_moe,
    load_expert_load,
    replica_counts,
    synthetic_load,
)

ROOT = Path(__file__).resolve().parents[2]
SETUP = MoeSetup(group=4, experts=8, flops_per_token=3.0, expert_bytes=100.0,
                 token_bytes=10.0, peak_flops_per_s=1.0, link_bytes_per_s=1000.0,
                 node_gpus=2, nic_bytes_per_s=100.0)


def _load(*steps: tuple[int, ...]) -> ExpertLoad:
    return ExpertLoad(tuple((s,) for s in steps), "test")


def test_uniform_load_is_balanced_everywhere() -> None:
    b = bound_moe(_load((4,) * 8, (4,) * 8), SETUP)
    assert b.static_s == b.oracle_s == b.lagged_s == b.balanced_s == (72.0, 72.0)
    assert b.imbalance == ((1.0,), (1.0,))
    assert b.a2a_bytes_per_rank == (0.0, 0.0)  # every GPU may keep its own tokens


def test_skew_static_vs_adaptive_and_a2a() -> None:
    hot = (24, 0, 2, 2, 2, 2, 0, 0)  # 32 tokens, expert 0 hot, on GPU 0 with expert 1
    setup = MoeSetup(**{**{f: getattr(SETUP, f) for f in SETUP.__dataclass_fields__},
                        "slots": 4})
    b = bound_moe(_load(hot, hot), setup)
    t = 9.0  # 3 phi / peak per token
    assert b.static_s[0] == 24 * t and b.imbalance[0] == (3.0,)
    # 16 slots: expert 0 gets 9 replicas -> 24/9 < 32/4 = 8: perfectly balanced
    assert b.oracle_s[0] == pytest.approx(8 * t)
    assert b.lagged_s[0] == b.static_s[0]  # the first step has no history
    assert b.lagged_s[1] == pytest.approx(max(8 * t, b.move_s[1]))
    assert b.move_s[1] > 0.0
    assert b.a2a_bytes_per_rank[0] == 4 * (24 - 8) * 10.0
    assert b.node_cut_bytes[0] == 4 * (28 - 16) / (2 * 2) * 10.0  # GPUs 0-1: 24 + 4


def test_replica_counts_minimise_the_max_share() -> None:
    assert replica_counts((8, 1, 1, 2), 6) == (3, 1, 1, 1)
    assert replica_counts((1, 1), 2) == (1, 1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=8, max_size=8), st.integers(1, 4))
def test_oracle_between_balanced_and_static(load: list[int], extra: int) -> None:
    setup = MoeSetup(**{**{f: getattr(SETUP, f) for f in SETUP.__dataclass_fields__},
                        "slots": 2 + extra})
    b = bound_moe(_load(tuple(load)), setup)
    assert b.balanced_s[0] - 1e-9 <= b.oracle_s[0] <= b.static_s[0] + 1e-9
    assert b.oracle_s[0] <= b.lagged_s[0] + 1e-9 or b.lagged_s[0] == b.static_s[0]


def test_synthetic_loads_sum_to_the_tokens() -> None:
    z = synthetic_load("zipf:1.2", experts=8, layers=2, tokens=1000, steps=3)
    assert all(sum(layer) == 1000 for step in z.counts for layer in step)
    assert max(z.counts[0][0]) > 1000 / 8 * 2
    u = synthetic_load("uniform", experts=8, layers=1, tokens=800)
    assert u.counts[0][0] == (100,) * 8


def test_files_npz_and_csv(tmp_path: Path) -> None:
    arr = np.arange(2 * 3 * 8).reshape(2, 3, 8)
    np.savez(tmp_path / "l.npz", counts=arr)
    assert load_expert_load(tmp_path / "l.npz").counts[1][2][7] == 47
    np.savez(tmp_path / "src.npz", counts=np.ones((1, 1, 4, 8)))  # per source rank
    assert load_expert_load(tmp_path / "src.npz").counts[0][0] == (4,) * 8
    (tmp_path / "l.csv").write_text("step,layer,expert,tokens\n0,0,0,5\n0,0,1,3\n")
    assert load_expert_load(tmp_path / "l.csv").counts == (((5, 3),),)


@pytest.mark.parametrize("bad", [
    np.full((1, 1, 8), -1.0),        # negative
    np.full((1, 1, 8), 1.5),         # not integer
    np.zeros((2,)),                  # wrong rank
])
def test_bad_histograms_are_coded(tmp_path: Path, bad: np.ndarray) -> None:
    np.savez(tmp_path / "bad.npz", counts=bad)
    with pytest.raises(PlanError) as err:
        load_expert_load(tmp_path / "bad.npz")
    assert err.value.code == "E0810"


def test_wrong_expert_count_is_coded(tmp_path: Path) -> None:
    with pytest.raises(PlanError) as err:
        bound_moe(_load((1,) * 6), SETUP)
    assert err.value.code == "E0810"
    (tmp_path / "x.csv").write_text("step,layer,expert\n0,0,0\n")
    with pytest.raises(PlanError) as err:
        load_expert_load(tmp_path / "x.csv")
    assert err.value.code == "E0810"
    with pytest.raises(PlanError) as err:
        synthetic_load("zipf", experts=8, layers=1, tokens=8)
    assert err.value.code == "E0804"


@pytest.mark.torch
def test_moe_section_on_a_captured_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    pytest.importorskip("torch")
    from solar.report import Report, render_text
    from tests.cli_helpers import run_cli

    out = tmp_path / "r.json"
    r = run_cli(capsys, "analyze", str(ROOT / "benchmarks" / "distributed" / "moe_gpt.py"),
                "--train", "--validate", "off", "-q", "--cluster", "DGX_H100", "--parallel",
                "tp=1,pp=2,dp=4,ep=4", "--global-batch", "8", "--moe-load", "zipf:1.2",
                "--moe-slots", "3", "--fail", "stage=1:k=1", "-o", str(out))
    assert r.code == 0, r.err
    report = Report.model_validate_json(out.read_text())
    d = report.distributed
    assert d is not None and d.moe is not None and d.failures is not None
    assert d.moe.experts == 8 and d.moe.group == 4 and d.moe.steps == 8
    # token ids [1, SEQ=64] with hidden 64: 64 tokens (the width is no hidden size), so
    # the tokens/s ceiling counts them all (it took 1 token, a 64x too low "ceiling")
    assert d.structure.tokens_per_micro_batch == 64
    for s, o, b in zip(d.moe.static_s, d.moe.oracle_s, d.moe.balanced_s, strict=True):
        assert b <= o * (1 + 1e-9) and o <= s * (1 + 1e-9)
    assert "moe: zipf:1.2" in render_text(report)
    # Note [Charged all-to-all]: the load's all-to-all is a resource of the step bound
    assert d.step.time_s is not None and d.step.time_s >= min(d.moe.a2a_s) / 2
    assert any(a.startswith("MoE all-to-all charged") for a in d.assumptions)
    pytest.importorskip("matplotlib")
    from solar.report.plot import plot_report

    png = plot_report(report, tmp_path / "p.png")
    assert png.stat().st_size > 10_000
    bad = run_cli(capsys, "analyze", str(ROOT / "benchmarks" / "distributed" / "gpt.py"),
                  "--train", "--validate", "off", "-q", "--set", "LAYERS=2", "--set",
                  "HIDDEN=64", "--set", "HEADS=4", "--set", "SEQ=32", "--cluster", "DGX_H100",
                  "--parallel", "dp=2", "--global-batch", "2", "--moe-load", "uniform")
    assert bad.code == 2 and "error[E0810]" in bad.err


def test_raise_step_takes_the_higher_bound_and_scales_the_ceilings() -> None:
    from solar.distributed.moe_step import raise_step
    from solar.report.distributed import StepRow

    row = StepRow(time_s=2.0, binding="compute", binding_rank=0, mfu_ceiling=0.5,
                  mfu_peak_flops_per_s=1.0, tokens_per_s_ceiling=100.0, model_flops=1.0,
                  no_overlap_s=3.0, alpha_estimate_s=2.0)
    up = raise_step(row, 4.0, "MoE all-to-all (ep)")
    assert (up.time_s, up.binding, up.mfu_ceiling, up.tokens_per_s_ceiling) == (
        4.0, "MoE all-to-all (ep)", 0.25, 50.0)
    assert raise_step(row, 1.0, "x") is row
