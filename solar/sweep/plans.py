"""A sweep over parallel plans: one capture, every plan of a grid bounded, feasible ones ranked.

Contract: `plan_grid(axes) -> tuple[ParallelPlan, ...]` (the Cartesian product of
``--parallel tp=1,2,4,8 --parallel pp=1,2``, first axis slowest); `run_plan_sweep` runs
one engine task (`solar.batch.engine.run_tasks`: a thread here or a Dask worker) whose
child process (``python -m solar.sweep.plan_worker``) captures the model once and bounds
every plan with `solar.distributed.bound_prepared`; `rank_rows` orders the rows: feasible
plans by step bound, then infeasible ones (they do not fit in memory), then invalid ones
(a coded plan error, e.g. E0802 tp above the heads). `write_plan_table` writes
``plans.csv`` and ``plans.json`` atomically.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    "rank_rows",
    "run_plan_sweep",
    "write_plan_table",
]

PLAN_JOB_FORMAT: Final = "solar-plan-sweep-job/1"
MAX_PLANS: Final = 10_000
PLAN_COLUMNS: Final = ("rank", "plan", "world", "status", "step_s", "binding", "mfu_ceiling",
                       "tokens_per_s_ceiling", "memory_bytes", "error")
_RANK: Final = {"ok": 0, "infeasible": 1, "invalid": 2}


def plan_grid(axes: Sequence[str]) -> tuple[ParallelPlan, ...]:
    """Every plan of ``--parallel KEY=VALUES`` axes (a value list or ``lo..hi:step``).

    >>> [p.label() for p in plan_grid(["tp=1,2", "pp=1,4", "dp=2"])]
    ['tp=1,pp=1,dp=2', 'tp=1,pp=4,dp=2', 'tp=2,pp=1,dp=2', 'tp=2,pp=4,dp=2']

    Raises:
        UsageError: E0933 a malformed axis, a key twice; E0934 more than `MAX_PLANS`.
        PlanError: E0804 an unknown key or a bad value.
    """
    parsed: list[tuple[str, tuple[int, ...]]] = []
    for axis in axes:
        key, sep, text = axis.partition("=")
        key = key.strip()
        if not sep or key not in PLAN_KEYS or key == "world":
            raise UsageError(f"a plan axis is KEY=VALUES with KEY one of "
                             f"{', '.join(k for k in PLAN_KEYS if k != 'world')}; got `{axis}`",
                             code="E0933")
        if key in (k for k, _ in parsed):
            raise UsageError(f"plan key `{key}` is swept twice", code="E0933")
        parsed.append((key, parse_values(text)))
    count = 1
    for _, values in parsed:
        count *= len(values)
    if count > MAX_PLANS:
        raise UsageError(f"{count} plans is more than {MAX_PLANS}", code="E0934")
    keys = [k for k, _ in parsed]
    return tuple(
        parse_parallel(",".join(f"{k}={v}" for k, v in zip(keys, combo, strict=True)) or "tp=1")
        for combo in itertools.product(*(v for _, v in parsed))
    )


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


def _run(task: PlanSweep, stop: threading.Event) -> dict[str, object]:
    """The task: one child process that captures once and bounds every plan."""
    with (
        materialize(task.shipped) as (path, _display),
        tempfile.TemporaryDirectory(prefix="solar-plans-") as tmp,
    ):
        job = {"format": PLAN_JOB_FORMAT, "file": str(path), "options": dict(task.options),
               "cluster": task.cluster, "plans": list(task.plans),
               "micro_batch": task.micro_batch, "global_batch": task.global_batch,
               "recompute": task.recompute, "phase": task.phase}
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
    """Run the plan sweep on ``engine``; its result: ``status``, ``error``, ranked ``rows``."""
    outcome: dict[str, object] = {"status": "cancelled", "error": "stopped", "rows": []}

    def done(_index: int, result: dict[str, object] | TaskFailure) -> None:
        if isinstance(result, TaskFailure):
            outcome.update(status="error", error=result.cause, rows=[])
        else:
            outcome.update(result)

    run_tasks(_run, [task], engine, stop=stop or threading.Event(), on_done=done)
    rows = outcome.get("rows")
    outcome["rows"] = rank_rows(rows if isinstance(rows, list) else [])
    return outcome


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
