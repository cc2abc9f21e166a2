"""Failed data-parallel replicas of a pipeline stage, their micro-batches re-routed to the
surviving replicas of that stage (ReCycle's mechanism; docs/distributed.md).

Contract: ``(StageCosts, failures, dp, micro_batches, ...) -> FailureBound``, pure.

Note [Re-routed micro-batches]: stage ``S`` has ``D`` replicas (one per pipeline: the
data-parallel degree), each running ``m`` micro-batches per step. With ``K`` of them
down, their ``K m`` micro-batches go to the ``D - K`` survivors, which hold the same
parameters; whole micro-batches cannot be split, so the busiest survivor runs at least
``m' = m + ceil(K m / (D - K))`` micro-batches (pigeonhole). Its rank is then the
schedule-free bound's stage ``S`` with ``m'`` micro-batches:

    T_fail >= max(T(no failure), fill_S + m' (F_S + B_S + W_S) + O_S,
                  fill_S + m' (F_S + B_S) + sum_{r<=j<S} (B_j / v + P) + W_r / v + O_r).

Every re-routed micro-batch crosses pipelines twice each way (in from stage S-1 of its
own pipeline, out to its stage S+1; the same for its gradients; one crossing at a
pipeline end). The re-routed work fits in the schedule's bubble on stage S (a failure
then costs nothing) iff ``(m' - m)(F_S + B_S + W_S) <= bubble_S``. The baseline drops
every pipeline that lost a replica: ``D - K_max`` pipelines share the global batch, each
running ``ceil(m D / (D - K_max))`` micro-batches (``K_max``, the most replicas down at
one stage, is the fewest pipelines such a baseline must drop).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from solar.diagnostics import PlanError
from solar.distributed.schedules import StageCosts, pipeline_bounds

__all__ = ["Failure", "FailureBound", "bound_failures", "parse_failure"]

_FAIL = re.compile(r"^\s*stage\s*=\s*([0-9]{1,18})\s*:\s*k\s*=\s*([0-9]{1,18})\s*$")
"""At most 18 digits: a longer number is no stage or count, and Python refuses to convert
one of over 4300 digits (docs/reliability.md)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """``k`` data-parallel replicas of pipeline stage ``stage`` are down."""

    stage: int
    down: int


def parse_failure(text: str) -> Failure:
    """Parse ``stage=S:k=K``.

    >>> parse_failure("stage=3:k=1")
    Failure(stage=3, down=1)

    Raises:
        PlanError: E0804 a malformed value.
    """
    m = _FAIL.match(text)
    if m is None or int(m.group(2)) < 1:
        raise PlanError(f"bad --fail `{text}`", code="E0804",
                        notes=("give stage=S:k=K: K >= 1 replicas of pipeline stage S down",))
    return Failure(int(m.group(1)), int(m.group(2)))


@dataclass(frozen=True, slots=True)
class FailureBound:
    """The step under failures.

    Attributes:
        failures: replicas down per stage (merged).
        time_s: lower bound of the step with the failures.
        no_failure_s: the same bound without them.
        drop_pipelines_s: the baseline that drops every pipeline that lost a replica.
        binding_stage: the failed stage whose survivors bind (or -1: none binds).
        extra_micro_batches: per failed stage, micro-batches the busiest survivor adds.
        extra_work_s: per failed stage, (m' - m)(F + B + W).
        fits_in_bubble: per failed stage, the extra work fits in the schedule's bubble.
        extra_boundary_bytes: per failed stage, bytes the re-routed micro-batches send
            across pipelines (all survivors, activations and gradients).
        extra_activation_bytes: per failed stage, the busiest survivor's added
            activations (an ESTIMATE: its in-flight share grows with its micro-batches).
        curve: (replicas down at the binding stage, step bound) for 0 .. D-1.
    """

    failures: tuple[Failure, ...]
    time_s: float
    no_failure_s: float
    drop_pipelines_s: float
    binding_stage: int
    extra_micro_batches: tuple[int, ...]
    extra_work_s: tuple[float, ...]
    fits_in_bubble: tuple[bool, ...]
    extra_boundary_bytes: tuple[float, ...]
    extra_activation_bytes: tuple[float, ...]
    curve: tuple[tuple[int, float], ...]


def _merge(failures: Sequence[Failure], stages: int, dp: int) -> tuple[Failure, ...]:
    down: dict[int, int] = {}
    for f in failures:
        if not 0 <= f.stage < stages:
            raise PlanError(f"--fail stage={f.stage}: the pipeline has stages 0..{stages - 1}",
                            code="E0809")
        down[f.stage] = down.get(f.stage, 0) + f.down
    for stage, k in down.items():
        if k >= dp:
            raise PlanError(
                f"--fail: {k} of stage {stage}'s {dp} data-parallel replicas down leaves no "
                "survivor to take their micro-batches", code="E0809",
                notes=("at most dp - 1 replicas of a stage can fail",))
    return tuple(Failure(s, k) for s, k in sorted(down.items()))


def _stage_time(costs: StageCosts, m: int, extra: int, stage: int, v: int) -> float:
    """The schedule-free bound's terms for ``stage`` running ``m + extra`` micro-batches."""
    f, b, w, o = costs.forward_s, costs.input_grad_s, costs.weight_grad_s, costs.optimizer_s
    send = costs.send_s
    fill = sum(f[j] / v + send for j in range(stage))
    mm = m + extra
    work = fill + mm * (f[stage] + b[stage] + w[stage]) + o[stage]
    drain = max(fill + mm * (f[stage] + b[stage])
                + sum(b[j] / v + send for j in range(r, stage)) + w[r] / v + o[r]
                for r in range(stage + 1))
    return max(work, drain)


def _extra(m: int, k: int, dp: int) -> int:
    return math.ceil(k * m / (dp - k)) if k else 0


def bound_failures(
    costs: StageCosts,
    failures: Sequence[Failure],
    *,
    dp: int,
    micro_batches: int,
    chunks: int = 1,
    bubble_s: Sequence[float] = (),
    boundary_bytes: float = 0.0,
    in_flight: Sequence[float] = (),
) -> FailureBound:
    """The step bound with ``failures`` (Note [Re-routed micro-batches]).

    Args:
        costs: per-stage costs.
        failures: replicas down (several on one stage add up).
        dp: data-parallel replicas of each stage (D).
        micro_batches: micro-batches per replica per step (m).
        chunks: chunks per rank the schedule-free bound allows.
        bubble_s: per stage, the schedule's bubble (for ``fits_in_bubble``).
        boundary_bytes: one micro-batch's boundary activations per rank.
        in_flight: per stage, micro-batches the schedule holds (for memory).

    Raises:
        PlanError: E0809 a stage out of range, or as many failures as replicas.
    """
    p, m, v = costs.stages, micro_batches, chunks
    merged = _merge(failures, p, dp)
    base = pipeline_bounds(costs, m, v).time_s
    times = [(_stage_time(costs, m, _extra(m, f.down, dp), f.stage, v), f.stage) for f in merged]
    worst = max(times, default=(0.0, -1))
    k_max = max((f.down for f in merged), default=0)
    drop = pipeline_bounds(costs, math.ceil(m * dp / (dp - k_max)), v).time_s
    extras = tuple(_extra(m, f.down, dp) for f in merged)
    work = tuple(e * (costs.forward_s[f.stage] + costs.input_grad_s[f.stage]
                      + costs.weight_grad_s[f.stage]) for e, f in zip(extras, merged, strict=True))
    bubbles = list(bubble_s) or [0.0] * p
    crossings = [(1 if f.stage > 0 else 0) + (1 if f.stage < p - 1 else 0) for f in merged]
    acts = costs.activation_bytes or (0.0,) * p
    flight = list(in_flight) or [1.0] * p
    binding = worst[1] if worst[0] > base else -1
    curve_stage = worst[1] if worst[1] >= 0 else 0
    curve = tuple((k, max(base, _stage_time(costs, m, _extra(m, k, dp), curve_stage, v)))
                  for k in range(dp))
    return FailureBound(
        failures=merged, time_s=max(base, worst[0]), no_failure_s=base, drop_pipelines_s=drop,
        binding_stage=binding, extra_micro_batches=extras, extra_work_s=work,
        fits_in_bubble=tuple(x <= bubbles[f.stage] + 1e-15 for x, f in zip(work, merged,
                                                                           strict=True)),
        extra_boundary_bytes=tuple(2.0 * c * f.down * m * boundary_bytes
                                   for c, f in zip(crossings, merged, strict=True)),
        extra_activation_bytes=tuple(flight[f.stage] * e / m * acts[f.stage]
                                     for e, f in zip(extras, merged, strict=True)),
        curve=curve,
    )
