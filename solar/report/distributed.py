"""The report's ``distributed`` object: a plan's step bound on a cluster (docs/distributed.md).

Contract: pydantic models at the output boundary, built by `solar.distributed.bound_step`.
``step.time_s`` is a sound LOWER bound of one optimizer step (``train``) or of one
forward (``prefill``/``decode``) of the whole plan, or null when the plan does not fit
in memory (``memory.feasible`` false): an infeasible plan is never bounded silently.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CollectiveRow",
    "DistributedInfo",
    "MemoryRow",
    "PlanInfo",
    "RankRow",
    "StepRow",
    "StructureInfo",
]

_FROZEN = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class PlanInfo(BaseModel):
    """The plan bounded."""

    model_config = _FROZEN
    label: str = Field(description="the plan as --parallel spells it")
    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    vpp: int
    zero: int
    sp: bool
    world: int = Field(description="GPUs the plan uses")
    micro_batch: int
    global_batch: int
    micro_batches: int = Field(description="micro-batches each rank runs per step")
    recompute: Literal["none", "selective", "full"]
    phase: Literal["train", "prefill", "decode"]


class StructureInfo(BaseModel):
    """What the analysis read off the single-device program."""

    model_config = _FROZEN
    layers: int
    stack: str | None = Field(description="parameter prefix of the repeated blocks")
    hidden: int | None
    heads: int | None
    tokens_per_micro_batch: int
    tp_all_reduces_per_layer: int
    moe: bool
    replicated_kernels: int = Field(description="kernels TP leaves whole (norms)")


class StepRow(BaseModel):
    """The step bound and what binds it."""

    model_config = _FROZEN
    time_s: float | None = Field(
        description="sound lower bound of one step; null when the plan does not fit"
    )
    binding: str = Field(description="the resource that sets the bound (compute, hbm, a link)")
    binding_rank: int = Field(description="pipeline stage of the rank that binds")
    mfu_ceiling: float | None = Field(description="model FLOPs / (world x peak x bound)")
    mfu_peak_flops_per_s: float = Field(description="the per-GPU peak the MFU ceiling uses")
    tokens_per_s_ceiling: float | None
    model_flops: float = Field(description="FLOPs of one step's forward and backward, all ranks")
    no_overlap_s: float = Field(
        description="reference only: the binding rank's resources summed (no overlap)"
    )
    alpha_estimate_s: float = Field(
        description="ESTIMATE, not a bound: the bound with per-hop latencies added to links"
    )


class RankRow(BaseModel):
    """One pipeline stage's ranks (all TP/CP/DP ranks of a stage are alike)."""

    model_config = _FROZEN
    stage: int
    compute_s: float
    hbm_s: float
    links_s: dict[str, float] = Field(description="busy time per link resource")
    time_s: float = Field(description="max over this rank's resources")
    binding: str
    phases_s: dict[str, float] = Field(description="compute time per phase (all micro-batches)")


class CollectiveRow(BaseModel):
    """One collective of the plan, per rank (stage 0's counts for pipeline sends)."""

    model_config = _FROZEN
    op: Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv",
                "broadcast"]
    axis: str
    group_size: int
    phase: str
    what: str
    dtype: str
    bytes_per_rank: float = Field(description="S, the buffer each rank holds")
    count_per_step: float
    link: str
    min_bytes_per_rank: float = Field(description="bytes any algorithm must move, per run")
    time_s: float = Field(description="lower bound for all runs of the step on this link")
    in_bound: bool = Field(description="false: shown for information, not charged")


class MemoryRow(BaseModel):
    """Per-rank memory against the device's HBM (lower estimates: a plan reported
    infeasible needs at least this much)."""

    model_config = _FROZEN
    parameter_bytes: float
    gradient_bytes: float
    optimizer_state_bytes: float
    activation_bytes: float = Field(description="one micro-batch in flight (the minimum)")
    collective_buffer_bytes: float
    total_bytes: float
    capacity_bytes: float
    feasible: bool
    activation_estimate_bytes: float = Field(
        description="ESTIMATE: activations of the micro-batches a 1F1B schedule keeps in flight"
    )


class DistributedInfo(BaseModel):
    """A parallel plan's step bound on a cluster (``--cluster`` / ``--parallel``)."""

    model_config = _FROZEN
    cluster: str
    device: str
    plan: PlanInfo
    structure: StructureInfo
    step: StepRow
    ranks: tuple[RankRow, ...]
    collectives: tuple[CollectiveRow, ...]
    memory: MemoryRow
    assumptions: tuple[str, ...] = ()
