"""The child of a plan sweep: ``python -m solar.sweep.plan_worker JOB RESULT``.

Contract: reads a plan job (`solar.sweep.plans`), captures and prepares the model once
(`solar.pipeline.lift_source`, no validation: the plans are bounds of the same program),
then bounds every plan (`solar.distributed.bound_prepared`); a plan that cannot run is its
row's ``invalid`` status with the diagnostic's first line, never the sweep's failure.
Process setup, limits and the catch-all boundary are `solar.batch.worker`'s.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from solar.batch.worker import guard_user_code, serve
from solar.sweep.plans import PLAN_JOB_FORMAT

if TYPE_CHECKING:
    from solar.report import DistributedInfo

__all__ = ["main"]


def _bound_all(job: dict[str, object]) -> dict[str, object]:
    from solar.diagnostics import PlanError
    from solar.distributed import DistributedRequest, bound_prepared, parse_parallel
    from solar.pipeline import AnalyzeOptions, lift_source

    opts: dict[str, object] = dict(job["options"])  # type: ignore[call-overload]
    sizes = {str(k): int(v) for k, v in dict(opts.get("sizes") or {}).items()}  # type: ignore[call-overload]
    micro, glob = int(job["micro_batch"]), job.get("global_batch")  # type: ignore[call-overload]
    cluster, phase = str(job["cluster"]), str(job["phase"])
    train = bool(opts.get("train"))
    probe = DistributedRequest(cluster, None, micro, micro)  # turns symbolic re-capture off
    options = AnalyzeOptions(
        frontend=opts.get("frontend", "auto"),  # type: ignore[arg-type]
        entry=opts.get("entry"),  # type: ignore[arg-type]
        sizes=sizes, validate="off", train=train, train_step=train,
        optimizer=opts.get("optimizer", "auto"),  # type: ignore[arg-type]
        distributed=probe,
    )
    prepared = lift_source(Path(str(job["file"])), options)
    step = prepared.front.step
    plans = [str(x) for x in job["plans"]]  # type: ignore[attr-defined]
    micros = list(job.get("micro_batches") or [None] * len(plans))  # type: ignore[call-overload]
    schedules = tuple(str(x) for x in job.get("schedules") or ())  # type: ignore[attr-defined]
    rows: list[dict[str, object]] = []
    for label, mb in zip(plans, micros, strict=True):
        plan = parse_parallel(label)
        micro_size = int(mb) if mb else micro
        total = int(glob) if glob else micro_size * plan.dp  # type: ignore[call-overload]
        piped = bool(schedules) and train and phase == "train" and plan.pp >= 2
        request = DistributedRequest(
            cluster, plan, micro_size, total,
            recompute=job["recompute"],  # type: ignore[arg-type]
            phase=phase,  # type: ignore[arg-type]
            schedules=schedules if piped else (),
        )
        row: dict[str, object] = {"plan": plan.label(), "world": plan.world,
                                  "micro_batch": micro_size,
                                  "micro_batches": total // (plan.dp * micro_size) or None}
        try:
            info = bound_prepared(prepared.program, prepared.graph, prepared.sizes, request,
                                  phase_of=step.phase_of if step is not None else None,
                                  precision=prepared.precision,
                                  size_constants=prepared.front.source_sizes)
        except PlanError as err:
            rows.append({**row, "status": "invalid", "error": f"{err.code}: {err.message}"})
            continue
        base: dict[str, object] = {
            **row,
            "status": "ok" if info.memory.feasible else "infeasible",
            "step_s": info.step.time_s, "binding": info.step.binding,
            "mfu_ceiling": info.step.mfu_ceiling,
            "tokens_per_s_ceiling": info.step.tokens_per_s_ceiling,
            "memory_bytes": info.memory.total_bytes, "error": None,
        }
        rows.extend(_schedule_rows(base, info) if piped else [base])
    return {"status": "ok", "error": None, "rows": rows}


def _schedule_rows(base: dict[str, object], info: DistributedInfo) -> list[dict[str, object]]:
    """One row per bounded schedule: the step bound under that schedule is the larger of
    the plan's step bound and the schedule's (its pipeline, timed in its order)."""
    sched = info.schedule
    if sched is None or not sched.schedules:
        return [base]
    step = info.step.time_s
    out = []
    for r in sched.schedules:
        time_s = None if step is None else max(step, r.time_s)
        out.append({**base, "schedule": r.schedule, "step_s": time_s,
                    "binding": f"schedule {r.schedule}"
                    if step is not None and r.time_s > step else base["binding"]})
    return out


def _run(job: dict[str, object]) -> dict[str, object]:
    return guard_user_code(job, lambda: _bound_all(job))


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``JOB RESULT`` paths. Returns the exit status (0 with a result)."""
    return serve(argv if argv is not None else sys.argv[1:], PLAN_JOB_FORMAT, _run)


if __name__ == "__main__":
    import os

    _code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_code)
