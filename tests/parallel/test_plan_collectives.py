"""The collectives a plan adds, counted per rank per step, on a synthetic structure."""

from __future__ import annotations

import pytest

from solar.distributed import ModelStructure, min_bytes_per_rank, parse_parallel
from solar.distributed.plan_collectives import plan_collectives

H, TOKENS, LAYERS = 1024, 4096, 8
ACT = TOKENS * H * 2  # bf16 block activations of one micro-batch


def _structure(**kw: object) -> ModelStructure:
    fields: dict[str, object] = dict(
        layers=LAYERS, stack="layers", hidden=H, heads=16, tokens=TOKENS, batch=2, act_bytes=2,
        sub_blocks=2, moe=False, param_bytes=1e9, expert_param_bytes=0.0, grad_bytes=1e9,
        optimizer_bytes=2e9, saved_activation_bytes=1e8, replicated=frozenset(),
        stack_forward=frozenset(), phase={})
    fields.update(kw)
    return ModelStructure(**fields)  # type: ignore[arg-type]


def _count(plan: str, *, stage: int = 0, m: int = 4, recompute: str = "none",
           phase: str = "train", **kw: object) -> dict[tuple[str, str, str], float]:
    colls, _ = plan_collectives(_structure(**kw), parse_parallel(plan), stage=stage,
                                micro_batches=m, recompute=recompute, phase=phase)  # type: ignore[arg-type]
    out: dict[tuple[str, str, str], float] = {}
    for c in colls:
        key = (c.op, c.axis, c.phase)
        out[key] = out.get(key, 0.0) + c.count
    return out


def test_tp_all_reduces_per_layer_and_micro_batch() -> None:
    counts = _count("tp=8")
    # 2 sub-blocks x 8 layers x 4 micro-batches, forward and backward
    assert counts == {("all_reduce", "tp", "forward"): 64.0,
                      ("all_reduce", "tp", "backward"): 64.0}


def test_full_recompute_repeats_the_forward_reductions() -> None:
    assert _count("tp=8", recompute="full")[("all_reduce", "tp", "forward")] == 128.0


def test_sequence_parallelism_splits_each_all_reduce() -> None:
    counts = _count("tp=8,sp=1")
    assert counts[("reduce_scatter", "tp", "forward")] == counts[("all_gather", "tp", "forward")]
    assert ("all_reduce", "tp", "forward") not in counts


def test_inference_has_no_backward_and_no_gradients() -> None:
    assert set(_count("tp=8,dp=4", phase="prefill")) == {("all_reduce", "tp", "forward")}


@pytest.mark.parametrize(("stage", "fwd", "bwd"), [(0, 4.0, 0.0), (1, 4.0, 4.0), (3, 0.0, 4.0)])
def test_pipeline_sends_per_stage(stage: int, fwd: float, bwd: float) -> None:
    counts = _count("pp=4", stage=stage)
    assert counts.get(("send_recv", "pp", "forward"), 0.0) == fwd
    assert counts.get(("send_recv", "pp", "backward"), 0.0) == bwd


def test_interleaving_crosses_vpp_boundaries() -> None:
    assert _count("pp=4,vpp=2", stage=0)[("send_recv", "pp", "forward")] == 8.0


@pytest.mark.parametrize(("zero", "expected"), [
    (0, {("all_reduce", "dp", "backward"): 1.0}),
    (1, {("reduce_scatter", "dp", "backward"): 1.0, ("all_gather", "dp", "optimizer"): 1.0}),
    (2, {("reduce_scatter", "dp", "backward"): 1.0, ("all_gather", "dp", "optimizer"): 1.0}),
    (3, {("all_gather", "dp", "forward"): 4.0, ("reduce_scatter", "dp", "backward"): 1.0}),
])
def test_data_parallel_per_zero_stage(zero: int,
                                      expected: dict[tuple[str, str, str], float]) -> None:
    assert _count(f"dp=8,zero={zero}") == expected


def test_gradient_bytes_are_the_rank_s_shard() -> None:
    colls, _ = plan_collectives(_structure(), parse_parallel("tp=2,pp=2,dp=4"), stage=0,
                                micro_batches=1, recompute="none", phase="train")
    (dp,) = [c for c in colls if c.axis == "dp"]
    assert dp.bytes == 1e9 / 4 and dp.group_size == 4


def test_moe_all_to_all_is_shown_but_not_charged() -> None:
    colls, notes = plan_collectives(_structure(moe=True), parse_parallel("dp=8,ep=8"), stage=0,
                                    micro_batches=1, recompute="none", phase="train")
    (a2a,) = [c for c in colls if c.op == "all_to_all"]
    assert not a2a.in_bound and any("all-to-all" in n for n in notes)


@pytest.mark.parametrize(("plan", "params", "grads", "state"), [
    ("tp=2,pp=2,dp=4", 0.25e9, 0.25e9, 0.5e9),
    ("tp=2,pp=2,dp=4,zero=1", 0.25e9, 0.25e9, 0.125e9),
    ("tp=2,pp=2,dp=4,zero=2", 0.25e9, 0.0625e9, 0.125e9),
    ("tp=2,pp=2,dp=4,zero=3", 0.0625e9, 0.0625e9, 0.125e9),
])
def test_memory_per_zero_stage(plan: str, params: float, grads: float, state: float) -> None:
    from solar.distributed import DistributedRequest
    from solar.distributed.step import _memory
    from solar.hw import load_hardware_spec

    p = parse_parallel(plan)
    mem = _memory(_structure(), p, DistributedRequest("DGX_H100", p, 1, 4),
                  load_hardware_spec("H100_SXM"), 1)
    assert (mem.parameter_bytes, mem.gradient_bytes, mem.optimizer_state_bytes) == (
        pytest.approx(params), pytest.approx(grads), pytest.approx(state))
    assert mem.activation_bytes == pytest.approx(1e8 / 4)  # saved / (tp x pp x cp)
    assert mem.feasible


@pytest.mark.parametrize(("kv", "tp", "per_token"), [
    (H, 1, H * 2),          # MHA: 2 kv > hidden, the layer input is smaller
    (H, 2, H * 2 // 2),     # heads split over tp
    (H // 8, 1, H // 4 * 2),  # GQA: K and V (2 kv) are smaller than the hidden
])
def test_context_parallel_gathers_the_other_chunks_k_and_v(kv: int, tp: int,
                                                           per_token: int) -> None:
    """Note [Context-parallel K/V]: an all-gather of min(2 kv, hidden)/(cp tp) bytes per
    token over the cp group, once per layer and micro-batch in the forward, and a
    reduce-scatter of the same size (the dK/dV exchange) in the backward."""
    colls, notes = plan_collectives(_structure(kv_width=kv), parse_parallel(f"tp={tp},cp=4"),
                                    stage=0, micro_batches=4, recompute="none", phase="train")
    fwd, bwd = [c for c in colls if c.axis == "cp"]
    assert (fwd.op, fwd.group_size, fwd.phase, fwd.count) == (
        "all_gather", 4, "forward", 4 * LAYERS)
    assert (bwd.op, bwd.group_size, bwd.phase, bwd.count) == (
        "reduce_scatter", 4, "backward", 4 * LAYERS)
    assert fwd.bytes == bwd.bytes == TOKENS * per_token / 4
    assert any("recomputes another rank's sequence chunk" in n for n in notes)


@pytest.mark.parametrize("phase", ["prefill", "decode"])
def test_context_parallel_inference_has_no_backward_exchange(phase: str) -> None:
    colls, _ = plan_collectives(_structure(kv_width=H), parse_parallel("cp=2"), stage=0,
                                micro_batches=1, recompute="none", phase=phase)  # type: ignore[arg-type]
    assert [(c.op, c.phase) for c in colls if c.axis == "cp"] == [("all_gather", "forward")]


@pytest.mark.parametrize("cp", [2, 3, 4, 8])
@pytest.mark.parametrize("split", ["contiguous", "zigzag"])
def test_context_parallel_charge_is_at_most_the_counted_minimum(cp: int, split: str) -> None:
    """Note [Context-parallel K/V], counted token by token: a key token must leave its
    rank if a later token sits on another rank (forward), a query token if an earlier
    one does (backward); the charged all-gather plus reduce-scatter per rank is at most
    the average of those counts, for contiguous chunks and Megatron's load-balanced
    split (rank r holds chunks r and 2 cp - 1 - r of 2 cp)."""
    n = 8 * cp
    if split == "contiguous":
        owner = [t * cp // n for t in range(n)]
    else:
        half = n // (2 * cp)
        owner = [min(t // half, 2 * cp - 1 - t // half) for t in range(n)]
    later_elsewhere = sum(any(owner[q] != owner[t] for q in range(t + 1, n)) for t in range(n))
    earlier_elsewhere = sum(any(owner[k] != owner[t] for k in range(t)) for t in range(n))
    colls, _ = plan_collectives(_structure(kv_width=H, tokens=n), parse_parallel(f"cp={cp}"),
                                stage=0, micro_batches=1, recompute="none", phase="train")
    per_token = min(2 * H, H) * 2  # bf16, tp = 1
    charged = sum(c.count * min_bytes_per_rank(c.op, c.group_size, c.bytes) for c in colls
                  if c.axis == "cp") / LAYERS
    assert charged <= (later_elsewhere + earlier_elsewhere) * per_token / cp * (1 + 1e-12)
    if split == "contiguous":  # the all_gather CP shapes attain it
        assert charged == pytest.approx(2 * (cp - 1) / cp * n / cp * per_token)


def test_context_parallel_without_attention_is_not_charged() -> None:
    colls, notes = plan_collectives(_structure(), parse_parallel("cp=2"), stage=0,
                                    micro_batches=1, recompute="none", phase="train")
    assert not [c for c in colls if c.axis == "cp"]
    assert any("K/V exchange not charged" in n for n in notes)
