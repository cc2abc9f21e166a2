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

Note [Context-parallel K/V]: the sequence of ``N`` tokens is split over ``cp`` ranks,
``N / cp`` each, as the compute split assumes (contiguous chunks, or Megatron's
load-balanced split of ``2 cp`` chunks, rank ``r`` holding chunks ``r`` and
``2 cp - 1 - r``: any equal split), and attention is causal (or full) over the whole
sequence. Per token and head, write ``w = min(2 kv, hidden)`` for the least of what can
stand for a token's keys and values: its K and V (``2 kv``), or its layer input
(``hidden``, every head's at once). The argument is a count of what must leave each
rank; ``S = N w / (cp tp)`` is one chunk's worth per TP rank (TP splits the heads, and
each TP rank can send a different slice of the layer input).

* Forward. A key token ``t`` with a later query on another rank must be represented
  there: the rank holding ``t`` sends ``w`` for it, or receives those queries and sends
  their partial outputs (at least ``hidden`` per query, and there are at least as many
  such later queries as keys for both splits: more). Only the tokens after the last
  token held elsewhere, at most one chunk on the rank holding the last token, escape, so
  the ranks send at least ``(cp - 1) N w / tp`` together: ``(cp - 1)/cp S`` per rank on
  average, the all-gather of ``S`` charged once per layer and micro-batch.
* Backward (training). ``dK`` and ``dV`` of a key token ``t`` sum over every later
  query; for each query token ``q`` with an earlier key on another rank, the rank
  holding ``q`` sends ``q``'s part (its Q and dO, at least ``hidden``: dO is as wide as
  the attention output), or computes partial ``dK``/``dV`` of those earlier keys (with
  the K/V it received in the forward) and sends them back (at least ``w`` per earlier
  key, and there are at least as many such earlier keys as queries: the time reversal of
  the forward's count). Only the tokens before the first token held elsewhere escape,
  so again ``(cp - 1)/cp S`` per rank on average: the reduce-scatter of ``S`` charged
  once per layer and micro-batch in the backward. The backward's information depends on
  dO, which does not exist during the forward: no forward transfer can stand for it.

Per rank this is the average over the cp group; a sum of averages is the average of the
sums, at most the busiest rank's (Note [Directions] in `solar.distributed.collectives`),
and without in-network work the bytes received equal the bytes sent. Megatron's
all_gather context parallelism has these two collectives' form over the whole sequence
(every rank gathers all K/V forward and reduce-scatters all dK/dV backward, ``2 kv``
per token): about ``cp`` times these bytes per rank, as its ring (p2p) form; Ulysses'
head-split all-to-all about ``(hidden + 2 kv) / w`` times (Megatron-LM ``cp_comm_type`` p2p /
all_gather / a2a; Liu et al., "Ring Attention", arXiv 2310.01889, Sec. 3; Jacobs et al.,
"DeepSpeed Ulysses", arXiv 2309.14509). Assumed (and listed): no attention window, and
no rank recomputes another rank's chunk to avoid the exchange. Not charged (a lower
bound may leave it out): the softmax statistics, and a full recompute's repeat of the
forward exchange.
"""

from __future__ import annotations

from solar.distributed.collectives import Collective
from solar.distributed.plan import ParallelPlan, Phase, Recompute
from solar.distributed.structure import ModelStructure

__all__ = ["plan_collectives"]


def _context_parallel(s: ModelStructure, plan: ParallelPlan, count: float, dtype: str,
                      notes: list[str], *, train: bool) -> list[Collective]:
    """Note [Context-parallel K/V]."""
    if not s.kv_width or not s.hidden:
        notes.append("context-parallel K/V exchange not charged: no attention K/V width "
                     "was recognised; the compute split by cp is")
        return []
    per_token = min(2 * s.kv_width, s.hidden) * s.act_bytes / plan.tp
    notes.append("context parallelism: attention spans the whole sequence (no window) and "
                 "no rank recomputes another rank's sequence chunk (the forward K/V and the "
                 "backward dK/dV exchanges are charged)")
    chunk = s.tokens * per_token / plan.cp
    out = [Collective("all_gather", plan.cp, chunk, dtype, "cp", "forward", count,
                      "K/V of the other sequence chunks, the least any split of heads "
                      "and tokens moves (min(2 kv, hidden) / (cp tp) per token)")]
    if train:
        out.append(Collective("reduce_scatter", plan.cp, chunk, dtype, "cp", "backward",
                              count, "dK/dV partials for the earlier sequence chunks (or "
                              "the later chunks' Q and dO, more)"))
    return out


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
        out.extend(_context_parallel(s, plan, m * layers, dtype, notes, train=train))
    if plan.ep > 1 and not s.moe:
        notes.append(f"ep={plan.ep}: no experts were recognised in the model, so expert "
                     "parallelism moves and divides nothing")
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
