"""The report's pipeline section: per-stage F/B/W/O, the schedule-free bounds and each
requested schedule (`solar.distributed.schedules`, `solar.distributed.stages`).

Contract: ``(Program, kernel bounds, ModelStructure, plan, cluster, ...) ->
PipelineReport``, pure. ``bound_s`` is what the step bound may use: the lower of the
unidirectional schedule-free bound (ranks holding up to ``max(vpp, 2)`` equal chunks)
and the bidirectional one (DualPipe), so it holds whichever schedule the run used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from solar.bounds import KernelBound
from solar.diagnostics import PlanError
from solar.distributed.collectives import Collective, charge_collective
from solar.distributed.failures import Failure, bound_failures
from solar.distributed.plan import ParallelPlan, Recompute
from solar.distributed.schedules import (
    SCHEDULES,
    Schedule,
    ScheduleBound,
    StageCosts,
    bound_schedule,
    pipeline_bounds,
)
from solar.distributed.stages import stage_costs
from solar.distributed.structure import ModelStructure
from solar.hw.cluster import ClusterSpec
from solar.ir import Program
from solar.report.distributed import (
    FailureInfo,
    FailureRow,
    ScheduleInfo,
    ScheduleRow,
    StageRow,
)

__all__ = ["GANTT_MAX_OPS", "PipelineReport", "boundary_send_s", "pipeline_report"]

GANTT_MAX_OPS: Final = 4096
"""Schedules with more operations than this are reported without their Gantt rows."""


@dataclass(frozen=True, slots=True)
class PipelineReport:
    """The pipeline section and the bound the step may take from it."""

    info: ScheduleInfo
    stages: tuple[StageRow, ...]
    bound_s: float
    binding: str
    costs: StageCosts
    failures: FailureInfo | None = None
    skipped: tuple[str, ...] = ()


def boundary_send_s(s: ModelStructure, plan: ParallelPlan, cluster: ClusterSpec) -> float:
    """P: one micro-batch's boundary activations (1/tp per rank, Megatron's scatter/
    gather) between neighbouring ranks, over the link they share (a lower bound)."""
    if plan.pp < 2 or not s.hidden:
        return 0.0
    nbytes = s.tokens / plan.cp * s.hidden * s.act_bytes / plan.tp
    c = Collective("send_recv", 2, nbytes, "activations", "pp", "forward", 1.0, "boundary")
    return max((ch.time_s for ch in charge_collective(c, plan.stride("pp"), cluster)),
               default=0.0)


def _row(b: ScheduleBound, gantt: bool) -> ScheduleRow:
    per_rank: list[list[tuple[str, float, float]]] = [[] for _ in b.busy_s]
    if gantt and len(b.ops) <= GANTT_MAX_OPS:
        for op in b.ops:
            per_rank[op.stage].append((f"{op.kind}{op.micro_batch}", op.start_s, op.end_s))
    return ScheduleRow(schedule=b.schedule, chunks=b.chunks, time_s=b.time_s,
                       bubble_s=b.bubble_s, in_flight=b.in_flight,
                       activation_bytes=b.activation_bytes,
                       gantt=tuple(tuple(r) for r in per_rank) if gantt else ())


def pipeline_report(
    program: Program,
    kernels: Sequence[KernelBound],
    s: ModelStructure,
    plan: ParallelPlan,
    sizes: Mapping[str, int],
    cluster: ClusterSpec,
    *,
    micro_batches: int,
    recompute: Recompute,
    schedules: Sequence[Schedule | str],
    failures: Sequence[Failure] = (),
) -> PipelineReport:
    """Per-stage costs, the schedule-free bounds and each schedule in ``schedules``
    (``all``: every schedule these sizes can run).

    Raises:
        PlanError: E0808 a requested schedule that cannot run with these sizes.
    """
    costs = stage_costs(program, kernels, s, plan, sizes, recompute=recompute,
                        send_s=boundary_send_s(s, plan, cluster))
    m = micro_batches
    v_lb = max(plan.vpp, 2)
    uni = pipeline_bounds(costs, m, v_lb)
    bi = pipeline_bounds(costs, m, 1, bidirectional=True) if plan.pp % 2 == 0 and m % 2 == 0 \
        else None
    default = "interleaved" if plan.vpp > 1 else "1f1b"
    wanted = list(SCHEDULES) if "all" in schedules else [str(x) for x in schedules]
    wanted = wanted or [default]
    rows: list[ScheduleBound] = []
    skipped: list[str] = []
    for name in wanted:
        sched: Schedule = next(x for x in SCHEDULES if x == name)
        chunks = plan.vpp if sched == "interleaved" else 1
        try:
            rows.append(bound_schedule(costs, sched, m, chunks))
        except PlanError as err:
            if "all" not in schedules:
                raise
            skipped.append(f"schedule {sched} not bounded: {err.message}")
    drawn = next((b for b in rows if b.schedule == default), rows[0] if rows else None)
    p = plan.pp
    stages = tuple(
        StageRow(stage=r, forward_s=costs.forward_s[r], input_grad_s=costs.input_grad_s[r],
                 weight_grad_s=costs.weight_grad_s[r], optimizer_s=costs.optimizer_s[r],
                 activation_bytes=costs.activation_bytes[r],
                 bubble_s=drawn.bubble_s[r] if drawn else 0.0,
                 in_flight=drawn.in_flight[r] if drawn else 0.0,
                 activation_peak_bytes=drawn.activation_bytes[r] if drawn else 0.0)
        for r in range(p)
    )
    if bi is not None and bi.time_s < uni.time_s:
        bound, binding = bi.time_s, f"pipeline work (bidirectional, stage {bi.binding_stage})"
    else:
        bound, binding = uni.time_s, f"pipeline {uni.binding} (stage {uni.binding_stage})"
    info = ScheduleInfo(
        send_s=costs.send_s, bound_s=bound, one_way_s=uni.time_s,
        bidirectional_s=bi.time_s if bi is not None else None, work_s=uni.work_s,
        fill_s=uni.fill_work_s,
        drain_s=uni.drain_s, periodic_s=uni.periodic_s, binding=uni.binding,
        binding_stage=uni.binding_stage, chunks=v_lb,
        drawn=drawn.schedule if drawn else None,
        schedules=tuple(_row(b, gantt=b is drawn) for b in rows),
    )
    return PipelineReport(info=info, stages=stages, bound_s=bound, binding=binding,
                          costs=costs, failures=_failures(costs, failures, plan, m, v_lb, drawn,
                                                          s), skipped=tuple(skipped))


def _failures(costs: StageCosts, failures: Sequence[Failure], plan: ParallelPlan, m: int,
              v: int, drawn: ScheduleBound | None, s: ModelStructure) -> FailureInfo | None:
    if not failures:
        return None
    boundary = s.tokens / plan.cp * (s.hidden or 0) * s.act_bytes / plan.tp
    fb = bound_failures(costs, failures, dp=plan.dp, micro_batches=m, chunks=v,
                        bubble_s=drawn.bubble_s if drawn else (),
                        boundary_bytes=boundary, in_flight=drawn.in_flight if drawn else ())
    rows = tuple(
        FailureRow(stage=f.stage, down=f.down, extra_micro_batches=fb.extra_micro_batches[i],
                   extra_work_s=fb.extra_work_s[i], fits_in_bubble=fb.fits_in_bubble[i],
                   extra_boundary_bytes=fb.extra_boundary_bytes[i],
                   extra_activation_bytes=fb.extra_activation_bytes[i])
        for i, f in enumerate(fb.failures))
    return FailureInfo(time_s=fb.time_s, no_failure_s=fb.no_failure_s,
                       drop_pipelines_s=fb.drop_pipelines_s, binding_stage=fb.binding_stage,
                       stages=rows, curve=fb.curve)
