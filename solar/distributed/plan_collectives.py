"""The collectives a plan adds to each rank's step (Megatron-style TP/SP, PP, DP/ZeRO, EP).

Contract: ``(ModelStructure, ParallelPlan, ...) -> tuple[Collective, ...]`` per pipeline
stage, pure. Counts are per rank per step; layer counts per stage are the average
L/pp (the busiest stage has at least as many layers). Each collective is one the plan
cannot do without; its bytes are the minimum that collective needs (`solar.distributed.
collectives`). What the structure cannot tell (the routing of an MoE all-to-all
without ``--moe-load``) is left out of the bound and said in the assumptions.

* TP: per layer and micro-batch, one all-reduce of the block's activations
  (tokens x hidden) at each row-parallel output in the forward and one at each
  column-parallel input in the backward (Shoeybi et al. 2019, Fig. 4); with sequence
  parallelism each becomes a reduce-scatter plus an all-gather of the same buffer
  (Korthikanti et al. 2022, Sec. 4.2.2). A full recompute repeats the forward ones.
* PP: per micro-batch, each stage sends its boundary activations forward and their
  gradients backward, 1/tp of them per rank (Megatron's scatter/gather optimisation);
  with vpp chunks a rank crosses vpp boundaries each way.
* DP: the gradients of the rank's parameters, all-reduced once per step (ZeRO 0), or
  reduce-scattered plus the updated parameters all-gathered (ZeRO 1-2), or gathered for
  every micro-batch (ZeRO 3). With cp > 1 the gradient group is dp*cp.
* CP: Note [Context-parallel K/V].

Note [Context-parallel K/V]: the sequence of ``N`` tokens is split over ``cp`` ranks
(``N / cp`` each, as the compute split assumes) and attention is causal (or full) over
the whole sequence, so every later token's output depends on the keys and values of
the first chunk. Whatever splits heads and tokens, the rank holding that chunk must send
out, for each of its ``N / cp`` tokens and each head, that head's K and V, or the
token's layer input (``hidden``, every head's at once), or partial outputs of the later
queries (at least ``hidden`` per later token: more); so at least
``N / cp x min(2 kv, hidden)`` bytes, ``1/tp`` of them per TP rank (TP splits the heads,
and each TP rank can send a different slice of the layer input). Charged, slightly
below that, as an all-gather over the cp group of ``S = N min(2 kv, hidden) / (cp tp)``
(``(cp-1)/cp S`` per rank), once per layer and micro-batch in the forward. Megatron's
all-gather and ring (p2p) context parallelism move about ``cp`` times this per rank
(every rank gets all K/V of its heads), Ulysses' head-split all-to-all about
``(hidden + 2 kv) / min(2 kv, hidden)`` times (Megatron-LM ``cp_comm_type`` p2p /
all_gather / a2a; Liu et al., "Ring Attention", arXiv 2310.01889; Jacobs et al.,
"DeepSpeed Ulysses", arXiv 2309.14509). Assumed (and listed): no attention window, and
no rank recomputes another rank's chunk to avoid the exchange. The backward's dK/dV
exchange is not charged: its least is not proven here.
"""

from __future__ import annotations

from solar.distributed.collectives import Collective
from solar.distributed.plan import ParallelPlan, Phase, Recompute
from solar.distributed.structure import ModelStructure

__all__ = ["plan_collectives"]


def _context_parallel(s: ModelStructure, plan: ParallelPlan, count: float, dtype: str,
                      notes: list[str]) -> list[Collective]:
    """Note [Context-parallel K/V]."""
    if not s.kv_width or not s.hidden:
        notes.append("context-parallel K/V exchange not charged: no attention K/V width "
                     "was recognised; the compute split by cp is")
        return []
    per_token = min(2 * s.kv_width, s.hidden) * s.act_bytes / plan.tp
    notes.append("context parallelism: attention spans the whole sequence (no window) and "
                 "no rank recomputes another rank's sequence chunk (the forward K/V exchange "
                 "is charged; the backward dK/dV exchange is not, its minimum is not proven)")
    return [Collective("all_gather", plan.cp, s.tokens * per_token / plan.cp, dtype, "cp",
                       "forward", count, "K/V of the other sequence chunks, the least any "
                       "split of heads and tokens moves (min(2 kv, hidden) / (cp tp) per token)")]


def _dtype(nbytes: int) -> str:
    return {1: "fp8", 2: "bf16/fp16", 4: "fp32", 8: "fp64"}.get(nbytes, f"{nbytes}-byte")


def plan_collectives(  # noqa: C901 - one block per plan axis
    s: ModelStructure,
    plan: ParallelPlan,
    *,
    stage: int,
    micro_batches: int,
    recompute: Recompute,
    phase: Phase,
) -> tuple[tuple[Collective, ...], tuple[str, ...]]:
    """The collectives of one rank of pipeline ``stage`` and the assumptions made.

    Returns:
        ``(collectives, assumptions)``.
    """
    train = phase == "train"
    m = float(micro_batches)
    dtype = _dtype(s.act_bytes)
    out: list[Collective] = []
    notes: list[str] = []
    tokens = s.tokens / plan.cp
    act = tokens * (s.hidden or 0) * s.act_bytes
    layers = s.layers / plan.pp
    if plan.tp > 1 and s.sub_blocks and s.hidden:
        runs = {"forward": m * layers * s.sub_blocks}
        if train:
            runs["backward"] = m * layers * s.sub_blocks
            if recompute == "full" and s.stack:
                runs["forward"] += m * layers * s.sub_blocks
        for ph, count in runs.items():
            ops = (("reduce_scatter", "all_gather") if plan.sp else ("all_reduce",))
            for op in ops:
                out.append(Collective(op, plan.tp, act, dtype, "tp", ph, count,  # type: ignore[arg-type]
                                      "block activations (tokens x hidden)"))
    elif plan.tp > 1:
        notes.append("TP collectives not charged: the hidden size or the blocks were not "
                     "recognised (give layers: in a --plan file)")
    if plan.pp > 1 and s.hidden:
        boundary = act / plan.tp
        last, first = stage == plan.pp - 1, stage == 0
        fwd = m * (plan.vpp - (1 if last else 0))
        if fwd:
            out.append(Collective("send_recv", 2, boundary, dtype, "pp", "forward", fwd,
                                  "stage-boundary activations (1/tp each)"))
        bwd = m * (plan.vpp - (1 if first else 0))
        if train and bwd:
            out.append(Collective("send_recv", 2, boundary, dtype, "pp", "backward", bwd,
                                  "stage-boundary gradients (1/tp each)"))
    group = plan.dp * plan.cp
    if train and group > 1:
        dense = s.param_bytes - s.expert_param_bytes
        grads = dense / (plan.tp * plan.pp)
        params = grads  # the program's parameter and gradient dtypes match
        grad_dtype = "as the parameters"
        if plan.zero == 0:
            out.append(Collective("all_reduce", group, grads, grad_dtype, "dp", "backward",
                                  1.0, "gradients"))
        elif plan.zero in (1, 2):
            out.append(Collective("reduce_scatter", group, grads, grad_dtype, "dp", "backward",
                                  1.0, "gradients (ZeRO)"))
            out.append(Collective("all_gather", group, params, grad_dtype, "dp", "optimizer",
                                  1.0, "updated parameters (ZeRO)"))
        else:
            out.append(Collective("all_gather", group, params, grad_dtype, "dp", "forward",
                                  m, "parameters for each micro-batch (ZeRO-3)"))
            out.append(Collective("reduce_scatter", group, grads, grad_dtype, "dp", "backward",
                                  1.0, "gradients (ZeRO-3)"))
        if s.expert_param_bytes:
            notes.append("expert gradients' data-parallel reduction not charged")
    if plan.cp > 1:
        out.extend(_context_parallel(s, plan, m * layers, dtype, notes))
    if plan.ep > 1 and s.moe and s.hidden:
        per = 4.0 if train else 2.0
        out.append(Collective("all_to_all", plan.ep, act, dtype, "ep",
                              "forward" if not train else "forward+backward",
                              m * layers * per, "routed tokens (top-1, uniform routing)",
                              in_bound=False))
        notes.append("MoE all-to-all shown for uniform top-1 routing but not charged: with "
                     "unknown routing the minimum over routings is zero (--moe-load charges "
                     "the given routing's)")
    return tuple(out), tuple(notes)
