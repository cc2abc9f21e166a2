"""A sweep over parallel plans: one capture, every plan of a grid bounded, feasible ones ranked.

Contract: `plan_grid(axes) -> tuple[ParallelPlan, ...]` (the Cartesian product of
``--parallel tp=1,2,4,8 --parallel pp=1,2``, first axis slowest) and `plan_points(axes)`
(the same with the sweep-only axis ``mb=`` of micro-batch sizes, so the micro-batch
counts ``global / (dp x mb)`` are swept too); `run_plan_sweep` fans the points out over
the engine (`solar.batch.engine.run_tasks`: threads here or Dask workers, Note [Plan
fan-out]), each task's child process (``python -m solar.sweep.plan_worker``) capturing
the model once and bounding its share of the points with
`solar.distributed.bound_prepared`, one row per point and requested pipeline schedule;
`rank_rows` orders the rows: feasible plans by step bound, then infeasible ones (they do
not fit in memory), then invalid ones (a coded plan error, e.g. E0802 tp above the
heads). `write_plan_table` writes ``plans.csv`` and ``plans.json`` atomically.

Note [Plan fan-out]: bounding a plan needs the captured program, which lives in the
child that captured it; so the points are dealt round-robin into ``min(workers,
points)`` tasks, and each task captures once and bounds its share. ``workers`` tasks run
at once (a ``LocalCluster`` of that many process workers, or a scheduler's workers), so
the wall time is one capture plus ``points / workers`` bounds instead of ``points``
bounds; the price is one capture per task. A task whose capture fails gives its
status to the sweep (the same model fails the same way in every task); the others' rows
are kept.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from solar.batch.child import failure_status, run_child
from solar.batch.engine import EngineOptions, TaskFailure, run_tasks
from solar.batch.remote import ShippedFile, materialize
from solar.diagnostics import UsageError
from solar.distributed.plan import PLAN_KEYS, ParallelPlan, parse_parallel
from solar.files import write_atomic
from solar.sweep.spec import parse_values

__all__ = [
    "PLAN_COLUMNS",
    "PLAN_JOB_FORMAT",
    "PlanSweep",
    "plan_grid",
    "plan_points",
    "rank_rows",
    "run_plan_sweep",
    "write_plan_table",
]

PLAN_JOB_FORMAT: Final = "solar-plan-sweep-job/1"
MAX_PLANS: Final = 10_000
PLAN_COLUMNS: Final = ("rank", "plan", "world", "status", "step_s", "binding", "mfu_ceiling",
                       "tokens_per_s_ceiling", "memory_bytes", "error", "micro_batch",
                       "micro_batches", "schedule")
SWEEP_ONLY: Final = ("mb",)
"""Axes a plan sweep takes besides the plan's keys: ``mb``, the micro-batch size."""
_RANK: Final = {"ok": 0, "infeasible": 1, "invalid": 2}


def plan_grid(axes: Sequence[str]) -> tuple[ParallelPlan, ...]:
    """Every plan of ``--parallel KEY=VALUES`` axes (a value list or ``lo..hi:step``).

    >>> [p.label() for p in plan_grid(["tp=1,2", "pp=1,4", "dp=2"])]
    ['tp=1,pp=1,dp=2', 'tp=1,pp=4,dp=2', 'tp=2,pp=1,dp=2', 'tp=2,pp=4,dp=2']

    Raises:
        UsageError: E0933 a malformed axis, a key twice; E0934 more than `MAX_PLANS`.
        PlanError: E0804 an unknown key or a bad value.
    """
    return tuple(p for p, _ in _points(axes, ()))


def plan_points(axes: Sequence[str]) -> tuple[tuple[ParallelPlan, int | None], ...]:
    """`plan_grid` with the sweep-only ``mb=`` axis: ``(plan, micro-batch size or None)``.

    >>> [(p.label(), mb) for p, mb in plan_points(["pp=2,4", "mb=1,2"])]
    [('tp=1,pp=2,dp=1', 1), ('tp=1,pp=2,dp=1', 2), ('tp=1,pp=4,dp=1', 1), ('tp=1,pp=4,dp=1', 2)]

    Raises:
        UsageError, PlanError: as `plan_grid`.
    """
    return _points(axes, SWEEP_ONLY)


def _points(axes: Sequence[str], extra: tuple[str, ...]
            ) -> tuple[tuple[ParallelPlan, int | None], ...]:
    parsed: list[tuple[str, tuple[int, ...]]] = []
    known = tuple(k for k in PLAN_KEYS if k != "world") + extra
    for axis in axes:
        key, sep, text = axis.partition("=")
        key = key.strip()
        if not sep or key not in known:
            raise UsageError(f"a plan axis is KEY=VALUES with KEY one of "
                             f"{', '.join(known)}; got `{axis}`", code="E0933")
        if key in (k for k, _ in parsed):
            raise UsageError(f"plan key `{key}` is swept twice", code="E0933")
        parsed.append((key, parse_values(text)))
    count = 1
    for _, values in parsed:
        count *= len(values)
    if count > MAX_PLANS:
        raise UsageError(f"{count} plans is more than {MAX_PLANS}", code="E0934")
    keys = [k for k, _ in parsed]
    out: list[tuple[ParallelPlan, int | None]] = []
    for combo in itertools.product(*(v for _, v in parsed)):
        chosen = dict(zip(keys, combo, strict=True))
        micro = chosen.pop("mb", None)
        plan = parse_parallel(",".join(f"{k}={v}" for k, v in chosen.items()) or "tp=1")
        out.append((plan, micro))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PlanSweep:
    """What a plan sweep asks for.

    Attributes:
        shipped: the model file.
        options: ``frontend``, ``entry``, ``train``, ``optimizer``, ``sizes``.
        cluster: a bundled cluster name (a path must exist where the task runs).
        plans: the plans' labels.
        micro_batch, global_batch, recompute, phase: as `solar analyze`.
        timeout_s, max_rss_mib: the child's limits.
        micro_batches: per plan, its micro-batch size (None: ``micro_batch``); empty:
            ``micro_batch`` for every plan.
        schedules: pipeline schedules to bound for each plan with pp >= 2 (``all``: every
            one these sizes can run); one row per schedule.
    """

    shipped: ShippedFile
    options: Mapping[str, object]
    cluster: str
    plans: tuple[str, ...]
    micro_batch: int
    global_batch: int | None
    recompute: str
    phase: str
    timeout_s: float | None
    max_rss_mib: float | None
    micro_batches: tuple[int | None, ...] = ()
    schedules: tuple[str, ...] = ()

    def split(self, parts: int) -> list[PlanSweep]:
        """The points dealt round-robin into at most ``parts`` tasks (Note [Plan fan-out])."""
        micro = self.micro_batches or (None,) * len(self.plans)
        n = max(1, min(parts, len(self.plans)))
        return [replace(self, plans=self.plans[i::n], micro_batches=micro[i::n])
                for i in range(n)]


def _run(task: PlanSweep, stop: threading.Event) -> dict[str, object]:
    """The task: one child process that captures once and bounds every plan."""
    with (
        materialize(task.shipped) as (path, _display),
        tempfile.TemporaryDirectory(prefix="solar-plans-") as tmp,
    ):
        job = {"format": PLAN_JOB_FORMAT, "file": str(path), "options": dict(task.options),
               "cluster": task.cluster, "plans": list(task.plans),
               "micro_batch": task.micro_batch, "global_batch": task.global_batch,
               "recompute": task.recompute, "phase": task.phase,
               "micro_batches": list(task.micro_batches), "schedules": list(task.schedules)}
        log = Path(tmp) / "plans.log"
        ended = run_child("solar.sweep.plan_worker", job, log=log, timeout_s=task.timeout_s,
                          max_rss_mib=task.max_rss_mib, stop=stop, max_result_bytes=1 << 28)
        result = ended.result
        if result is None or result.get("status") != "ok":
            status, cause = failure_status(ended, timeout_s=task.timeout_s,
                                           max_rss_mib=task.max_rss_mib, log=log, source=path)
            return {"status": status, "error": cause, "rows": []}
        return dict(result)


def run_plan_sweep(task: PlanSweep, engine: EngineOptions,
                   stop: threading.Event | None = None) -> dict[str, object]:
    """Run the plan sweep on ``engine``, fanned out (Note [Plan fan-out]); its result:
    ``status``, ``error``, ranked ``rows``."""
    parts = task.split(engine.workers)
    outcomes: list[dict[str, object]] = [
        {"status": "cancelled", "error": "stopped", "rows": []} for _ in parts]

    def done(index: int, result: dict[str, object] | TaskFailure) -> None:
        if isinstance(result, TaskFailure):
            outcomes[index] = {"status": "error", "error": result.cause, "rows": []}
        else:
            outcomes[index] = dict(result)

    run_tasks(_run, parts, engine, stop=stop or threading.Event(), on_done=done,
              name="solar-plans")
    failed = next((o for o in outcomes if o.get("status") != "ok"), None)
    rows = [row for o in outcomes for row in o.get("rows") or []  # type: ignore[attr-defined]
            if isinstance(row, dict)]
    return {"status": "ok" if failed is None else failed.get("status"),
            "error": None if failed is None else failed.get("error"),
            "rows": rank_rows(rows), "tasks": len(parts)}


def rank_rows(rows: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """Feasible plans by bound, then infeasible, then invalid ones; ``rank`` numbered.

    >>> r = rank_rows([{"plan": "a", "status": "ok", "step_s": 2.0},
    ...                {"plan": "b", "status": "invalid", "step_s": None},
    ...                {"plan": "c", "status": "ok", "step_s": 1.0}])
    >>> [(x["rank"], x["plan"]) for x in r]
    [(1, 'c'), (2, 'a'), (3, 'b')]
    """
    def key(row: Mapping[str, object]) -> tuple[int, float]:
        step = row.get("step_s")
        return (_RANK.get(str(row.get("status")), 3),
                float(step) if isinstance(step, int | float) else float("inf"))

    return [{**row, "rank": i} for i, row in enumerate(sorted(rows, key=key), start=1)]


def write_plan_table(rows: Sequence[Mapping[str, object]], out_dir: Path) -> Path:
    """Write ``plans.csv`` and ``plans.json`` into ``out_dir``; return the CSV's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(PLAN_COLUMNS)
    for row in rows:
        writer.writerow(["" if row.get(c) is None else row.get(c) for c in PLAN_COLUMNS])
    path = out_dir / "plans.csv"
    write_atomic(path, buffer.getvalue())
    write_atomic(out_dir / "plans.json",
                 json.dumps([{c: row.get(c) for c in PLAN_COLUMNS} for row in rows], indent=2)
                 + "\n")
    return path
