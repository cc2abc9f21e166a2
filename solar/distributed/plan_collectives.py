"""The collectives a plan adds to each rank's step (Megatron-style TP/SP, PP, DP/ZeRO, EP).

Contract: ``(ModelStructure, ParallelPlan, ...) -> tuple[Collective, ...]`` per pipeline
stage, pure. Counts are per rank per step; layer counts per stage are the average
L/pp (the busiest stage has at least as many layers). Each collective is one the plan
cannot do without; its bytes are the minimum that collective needs (`solar.distributed.
collectives`). What the structure cannot tell (the K/V width for context parallelism,
the routing of an MoE all-to-all) is left out of the bound and said in the assumptions.

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
"""

from __future__ import annotations

from solar.distributed.collectives import Collective
from solar.distributed.plan import ParallelPlan, Phase, Recompute
from solar.distributed.structure import ModelStructure

__all__ = ["plan_collectives"]


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
        notes.append("context-parallel K/V exchange not charged (the K/V width is not "
                     "inferred); the compute split by cp is")
    if plan.ep > 1 and s.moe and s.hidden:
        per = 4.0 if train else 2.0
        out.append(Collective("all_to_all", plan.ep, act, dtype, "ep",
                              "forward" if not train else "forward+backward",
                              m * layers * per, "routed tokens (top-1, uniform routing)",
                              in_bound=False))
        notes.append("MoE all-to-all shown for uniform top-1 routing but not charged: with "
                     "unknown routing the minimum over routings is zero (the next issue "
                     "takes router histograms)")
    return tuple(out), tuple(notes)
