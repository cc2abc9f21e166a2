"""Distributed speed of light: a parallel plan's step bound on a cluster.

Contract: `bound_step(program, graph, sizes, DistributedRequest, ...) -> DistributedInfo`
bounds one step of a Megatron-style plan (tp, pp, dp, cp, ep, vpp, ZeRO, sequence
parallelism) on a `solar.hw.ClusterSpec`, from the single-device program's kernel bounds
(plan, cluster, collectives cost, memory, step bound; docs/distributed.md). Every time
it reports is a LOWER bound, or is labelled an estimate.
"""

from __future__ import annotations

from solar.distributed.collectives import (
    COLLECTIVE_OPS,
    Collective,
    CollectiveOp,
    GroupPlacement,
    LinkCharge,
    alpha_estimate_s,
    charge_collective,
    cut_bytes,
    direction_bytes,
    min_bytes_per_rank,
    place_group,
)
from solar.distributed.plan import (
    PLAN_KEYS,
    ParallelPlan,
    Phase,
    PlanFile,
    Recompute,
    check_plan,
    load_plan_file,
    parse_parallel,
)
from solar.distributed.step import DistributedRequest, bound_prepared, bound_step
from solar.distributed.structure import ModelStructure, infer_structure

__all__ = [
    "COLLECTIVE_OPS",
    "PLAN_KEYS",
    "Collective",
    "CollectiveOp",
    "DistributedRequest",
    "GroupPlacement",
    "LinkCharge",
    "ModelStructure",
    "ParallelPlan",
    "Phase",
    "PlanFile",
    "Recompute",
    "alpha_estimate_s",
    "bound_prepared",
    "bound_step",
    "charge_collective",
    "check_plan",
    "cut_bytes",
    "direction_bytes",
    "infer_structure",
    "load_plan_file",
    "min_bytes_per_rank",
    "parse_parallel",
    "place_group",
]
