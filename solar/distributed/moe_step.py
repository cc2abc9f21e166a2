"""The report's ``moe`` section: a plan's expert phase under a given expert load
(`solar.distributed.moe`), with the model's and cluster's figures.

Contract: ``(Program, ModelStructure, plan, cluster, peak, moe_load, ...) -> MoeInfo``.
``moe_load`` is a ``.npz``/``.csv`` path or ``uniform`` / ``zipf:ALPHA``.

Note [Charged all-to-all]: without a load the routing is unknown and the least any
routing must move is zero (every token may stay on its GPU), so the plan's all-to-all
row is shown, not charged. With ``--moe-load`` the tokens each GPU's experts receive are
known, and ``in_g >= max(0, L_g - T/G)`` tokens must arrive from other GPUs, four times
per layer (Note [Expert placement bounds]); that time, for the load's least busy step and
the average pipeline stage's share of the layers, is a resource of its own in the step
bound (its links also carry other traffic, so it is never added to them).
"""

from __future__ import annotations

import re
from pathlib import Path

from solar.diagnostics import PlanError
from solar.distributed.moe import (
    ExpertLoad,
    MoeSetup,
    bound_moe,
    load_expert_load,
    synthetic_load,
)
from solar.distributed.plan import ParallelPlan
from solar.distributed.structure import ModelStructure
from solar.hw.cluster import ClusterSpec
from solar.ir import Program
from solar.report.distributed import DistributedInfo, MoeInfo, StepRow

__all__ = ["moe_info", "raise_step", "with_moe"]

_EXPERT = re.compile(r"(?:^|_)experts_(\d+)_")


def _experts(program: Program, s: ModelStructure) -> tuple[int | None, int]:
    """Experts per MoE layer (distinct ``experts_<i>_`` indices of the first layer's
    parameters) and the MoE layers (the stack's layers)."""
    first = f"p_{s.stack}_0_" if s.stack else "p_"
    idx = {int(m.group(1)) for d in program.tensors
           if d.role == "param" and d.name.startswith(first) and (m := _EXPERT.search(d.name))}
    return (len(idx) or None), max(s.layers, 1)


def _load(text: str, *, experts: int | None, layers: int, tokens: int) -> ExpertLoad:
    if text.strip() in ("uniform",) or text.strip().startswith("zipf:"):
        if experts is None:
            raise PlanError(f"--moe-load {text}: the model's expert count is unknown "
                            "(parameters named experts_<i>_); give a load file", code="E0810")
        return synthetic_load(text, experts=experts, layers=layers, tokens=tokens)
    return load_expert_load(Path(text))


def moe_info(
    program: Program,
    s: ModelStructure,
    plan: ParallelPlan,
    cluster: ClusterSpec,
    *,
    peak_flops_per_s: float,
    moe_load: str,
    slots: int | None,
    micro_batches: int,
) -> MoeInfo:
    """Bound the expert phase of each step of ``moe_load``.

    Raises:
        PlanError: E0810 a model without experts, or a load that does not fit it.
    """
    if not s.moe or s.expert_param_bytes <= 0:
        raise PlanError("--moe-load needs a mixture-of-experts model (parameters named "
                        "experts_<i>_ or experts)", code="E0810")
    experts, layers = _experts(program, s)
    group = plan.ep
    tokens = s.tokens * micro_batches * group  # top-1 tokens of the EP group per step
    load = _load(moe_load, experts=experts, layers=layers, tokens=tokens)
    e = load.experts
    itemsize = next((d.dtype.itemsize_bytes for d in program.tensors
                     if d.role == "param" and "expert" in d.name), s.act_bytes)
    per_expert_bytes = s.expert_param_bytes / (e * layers)
    stride = plan.stride("ep")
    members = max(1, min(group, cluster.scale_up.domain_size // max(stride, 1)))
    so = cluster.scale_out
    link = cluster.scale_up.bandwidth_per_direction_bytes_per_s + (
        so.nics_per_gpu * so.bandwidth_per_direction_bytes_per_s if so else 0.0)
    setup = MoeSetup(
        group=group, experts=experts,
        flops_per_token=2.0 * per_expert_bytes / itemsize / plan.tp,
        expert_bytes=per_expert_bytes / plan.tp,
        token_bytes=float((s.hidden or 0) * s.act_bytes),
        peak_flops_per_s=peak_flops_per_s, link_bytes_per_s=link, node_gpus=members,
        nic_bytes_per_s=members * so.nics_per_gpu * so.bandwidth_per_direction_bytes_per_s
        if so else 0.0,
        slots=slots,
    )
    b = bound_moe(load, setup)
    return MoeInfo(
        source=load.source, experts=e, layers=len(load.counts[0]), steps=len(load.counts),
        group=group, slots_per_gpu=max(slots or e // group, e // group),
        static_s=b.static_s, lagged_s=b.lagged_s, oracle_s=b.oracle_s,
        balanced_s=b.balanced_s, move_s=b.move_s, imbalance=b.imbalance,
        a2a_bytes_per_rank=b.a2a_bytes_per_rank, node_cut_bytes=b.node_cut_bytes,
        a2a_s=b.a2a_s, loads=load.counts if e * len(load.counts) <= 4096 else (),
    )


def raise_step(step: StepRow, time_s: float, binding: str) -> StepRow:
    """``step`` with its bound raised to ``time_s`` where that is higher (the ceilings
    scale with it)."""
    if step.time_s is None or time_s <= step.time_s:
        return step
    scale = step.time_s / time_s
    return step.model_copy(update={
        "time_s": time_s,
        "binding": binding,
        "mfu_ceiling": step.mfu_ceiling * scale if step.mfu_ceiling else None,
        "tokens_per_s_ceiling": step.tokens_per_s_ceiling * scale
        if step.tokens_per_s_ceiling else None,
    })


def with_moe(info: DistributedInfo, moe: MoeInfo, pp: int) -> DistributedInfo:
    """Add the ``moe`` section and charge its all-to-all (Note [Charged all-to-all])."""
    a2a_s = min(moe.a2a_s, default=0.0) / pp
    note = ("MoE all-to-all charged from --moe-load: the tokens each GPU's experts receive "
            "beyond its own share, 4 per layer, the load's least step, 1/pp of the layers")
    return info.model_copy(update={
        "moe": moe, "step": raise_step(info.step, a2a_s, "MoE all-to-all (ep)"),
        "assumptions": (*info.assumptions, note)})
