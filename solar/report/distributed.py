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
    "FailureInfo",
    "FailureRow",
    "MemoryRow",
    "MoeInfo",
    "PlanInfo",
    "RankRow",
    "ScheduleInfo",
    "ScheduleRow",
    "StageRow",
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


class StageRow(BaseModel):
    """One pipeline rank's operations per micro-batch (lower bounds) and, under the
    schedule the step is drawn with, its bubble and activation memory."""

    model_config = _FROZEN
    stage: int
    forward_s: float = Field(description="F: one micro-batch's forward on this rank")
    input_grad_s: float = Field(description="B: its input gradient (what rank s-1 waits for)")
    weight_grad_s: float = Field(description="W: its weight gradients")
    optimizer_s: float = Field(description="O: the rank's optimizer step, once per step")
    activation_bytes: float = Field(description="activations one micro-batch keeps until its W")
    bubble_s: float = Field(description="idle time within the step under `schedule.drawn`")
    in_flight: float = Field(description="peak micro-batches held under `schedule.drawn`")
    activation_peak_bytes: float = Field(description="in_flight x activation_bytes")


class ScheduleRow(BaseModel):
    """One pipeline schedule's step bound (its fixed per-rank order timed with the
    stages' costs; docs/distributed.md, Note [Fixed orders])."""

    model_config = _FROZEN
    schedule: Literal["gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zbv", "dualpipe"]
    chunks: int = Field(description="chunks (virtual stages) per rank")
    time_s: float = Field(description="lower bound of one step under this schedule")
    bubble_s: tuple[float, ...] = Field(description="per rank: idle time within the step")
    in_flight: tuple[float, ...] = Field(description="per rank: peak micro-batches held")
    activation_bytes: tuple[float, ...] = Field(description="per rank: peak activation bytes")
    gantt: tuple[tuple[tuple[str, float, float], ...], ...] = Field(
        default=(), description="per rank: (op, start s, end s); op is F|B|W<micro-batch>")


class ScheduleInfo(BaseModel):
    """Pipeline schedules: the schedule-free bounds and each requested schedule."""

    model_config = _FROZEN
    send_s: float = Field(description="P: one boundary transfer (activations or gradients)")
    bound_s: float = Field(description="lower bound for ANY synchronous flushing schedule: "
                                       "the lower of the one-way and the bidirectional bound")
    one_way_s: float = Field(description="schedules feeding every micro-batch at rank 0: "
                                         "max(fill + work, fill + drain)")
    bidirectional_s: float | None = Field(
        description="schedules feeding half the micro-batches at each end (DualPipe): fill "
                    "from the nearer end + the two stages' work; null for odd pp or m")
    work_s: float = Field(description="max over ranks of m (F + B + W) + O")
    fill_s: float = Field(description="the fill + work bound")
    drain_s: float = Field(description="the fill + drain bound")
    periodic_s: float = Field(description="period bound with no global optimizer sync")
    binding: Literal["work", "fill", "drain"]
    binding_stage: int
    chunks: int = Field(description="chunks per rank the schedule-free bound allows")
    drawn: str | None = Field(description="the schedule `stages[]` and the Gantt show")
    schedules: tuple[ScheduleRow, ...] = ()


class FailureRow(BaseModel):
    """One stage's failed replicas and what their re-routed micro-batches cost."""

    model_config = _FROZEN
    stage: int
    down: int = Field(description="data-parallel replicas of this stage that are down")
    extra_micro_batches: int = Field(description="micro-batches the busiest survivor adds")
    extra_work_s: float = Field(description="their F + B + W on the survivor")
    fits_in_bubble: bool = Field(description="the extra work fits in the schedule's bubble")
    extra_boundary_bytes: float = Field(
        description="bytes the re-routed micro-batches send across pipelines")
    extra_activation_bytes: float = Field(
        description="ESTIMATE: the busiest survivor's added activations")


class FailureInfo(BaseModel):
    """Failed data-parallel replicas, their micro-batches re-routed to the survivors
    (docs/distributed.md, Note [Re-routed micro-batches])."""

    model_config = _FROZEN
    time_s: float = Field(description="lower bound of one step with the failures, for "
                          "one-way schedules (every micro-batch enters at rank 0: all but "
                          "dualpipe), from the pipeline's work, fill and drain")
    no_failure_s: float = Field(description="the same (one-way schedule-free) bound "
                                "without them")
    drop_pipelines_s: float = Field(
        description="baseline: the pipelines that lost a replica are dropped")
    binding_stage: int = Field(description="failed stage whose survivors bind; -1: none")
    stages: tuple[FailureRow, ...]
    curve: tuple[tuple[int, float], ...] = Field(
        description="(replicas down at the binding stage, step bound)")


class MoeInfo(BaseModel):
    """The expert phase per step under an expert load (docs/distributed.md, Note
    [Expert placement bounds]); every time a lower bound."""

    model_config = _FROZEN
    source: str = Field(description="the load: a file, `uniform` or `zipf:ALPHA`")
    experts: int
    layers: int
    steps: int
    group: int = Field(description="GPUs in the expert-parallel group")
    slots_per_gpu: int = Field(description="expert slots per GPU for adaptive placement")
    static_s: tuple[float, ...] = Field(description="per step: experts pinned to GPUs")
    lagged_s: tuple[float, ...] = Field(
        description="per step: replicas placed from the previous step's load, moves counted")
    oracle_s: tuple[float, ...] = Field(description="per step: placed from its own load")
    balanced_s: tuple[float, ...] = Field(description="per step: perfectly even loads")
    move_s: tuple[float, ...] = Field(description="per step: the lagged placement's moves")
    imbalance: tuple[tuple[float, ...], ...] = Field(
        description="per step and layer: static max GPU load / mean")
    a2a_bytes_per_rank: tuple[float, ...] = Field(
        description="per step: the busiest GPU's all-to-all bytes in (4 per layer)")
    node_cut_bytes: tuple[float, ...] = Field(
        description="per step: the busiest scale-up domain's bytes in across its boundary")
    a2a_s: tuple[float, ...] = Field(description="per step: all-to-all link time")
    loads: tuple[tuple[tuple[int, ...], ...], ...] = Field(
        default=(), description="tokens per step, layer and expert (small loads only)")


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
    schedule: ScheduleInfo | None = None
    stages: tuple[StageRow, ...] = ()
    failures: FailureInfo | None = None
    moe: MoeInfo | None = None
