"""Run a sweep: plan the captures, run them on an engine, write the table and reports.

Contract: ``SweepSpec + SweepLimits + EngineOptions -> SweepSummary``. The Cartesian
product of size bindings (`sweep_points`) is covered by as few captures as the
program allows (Note [Capture plan]); each capture is one engine task
(`solar.sweep.task.run_capture`: a fresh process, under ``--timeout`` and
``--max-rss``, on this machine or a Dask worker), bounding every point it serves
under every precision policy and architecture. Outputs in ``out_dir``:
``reports/p<point>-<precision>.json`` (one `solar analyze` report each),
``logs/capture-<n>.log``, ``sweep.parquet`` or ``sweep.csv`` (one row per point,
precision and arch; `solar.sweep.table`) and ``sweep.json`` (plan, captures, rows).

Note [Capture plan]
~~~~~~~~~~~~~~~~~~~
Which sizes a program can be re-bound in is known only once it is captured (Note
[Symbolic re-binding] in `solar.sweep.worker`). So the first round is one capture,
at the first point, offered every point; it serves those that differ from it only in
re-bindable sizes (for an IR file: all of them) and reports the rest, with the sizes
it could re-bind. Each further round groups the remaining points by their values of
the other sizes, one capture per group (run in parallel on the engine), until every
point is served or its capture failed. A sweep over sizes of a symbolic program
therefore costs one capture; a program captured with concrete sizes costs one
capture per distinct binding.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from solar.batch.engine import EngineOptions, TaskFailure, TaskRunner, task_runner
from solar.batch.job import BatchStatus
from solar.batch.remote import ShippedFile
from solar.diagnostics import UsageError
from solar.files import prepare_output_dir, write_atomic
from solar.sweep.journal import Finished, Journal, read_finished, sweep_key
from solar.sweep.spec import SweepSpec, sweep_points
from solar.sweep.table import TableFormat, is_valid_row, write_json, write_table
from solar.sweep.task import CaptureOutcome, CaptureTask, run_capture

__all__ = [
    "SWEEP_FORMAT",
    "CaptureRecord",
    "SweepLimits",
    "SweepSummary",
    "capture_groups",
    "run_sweep",
]

SWEEP_FORMAT = "solar-sweep/1"
_TASK_STATUS: dict[str, BatchStatus] = {
    "lost-worker": "crashed",
    "cancelled": "cancelled",
    "internal": "error",
}


@dataclass(frozen=True, slots=True)
class SweepLimits:
    """Per-capture limits, the table format, and whether to write per-point reports."""

    timeout_s: float | None = 900.0
    max_rss_mib: float | None = None
    table: TableFormat = "parquet"
    reports: bool = True


@dataclass(frozen=True, slots=True)
class CaptureRecord:
    """One capture: where it was taken, what it served, how long it took."""

    index: int
    sizes: Mapping[str, int]
    status: BatchStatus
    error: str | None
    served: int
    wall_s: float
    capture_s: float
    bind_s: float
    peak_rss_mib: float


@dataclass(frozen=True, slots=True)
class SweepSummary:
    """A finished sweep: its rows, captures and output paths."""

    points: int
    rows: tuple[dict[str, object], ...]
    captures: tuple[CaptureRecord, ...]
    rebindable: tuple[str, ...]
    table_path: Path
    json_path: Path
    wall_s: float
    stopped: bool = False
    counts: Mapping[str, int] = field(default_factory=dict)
    resumed: int = 0

    @property
    def failed(self) -> int:
        """Rows whose point errored, timed out, hit the memory limit or crashed."""
        return sum(self.counts.get(s, 0) for s in ("error", "timeout", "memory-limit", "crashed"))


Progress = Callable[[int, int, CaptureRecord], None]


def _options(spec: SweepSpec) -> dict[str, object]:
    return {
        "frontend": spec.frontend,
        "validate": spec.validate,
        "time_budget_s": spec.time_budget_s,
        "entry": spec.entry,
        "cache": spec.cache,
        "entry_args": spec.entry_args,
        "inputs_file": None if spec.inputs_file is None else str(spec.inputs_file.resolve()),
        "input_shapes": list(spec.input_shapes),
    }


def capture_groups(
    remaining: Sequence[int], points: Sequence[Mapping[str, int]], rebindable: frozenset[str] | None
) -> list[list[int]]:
    """Points that one capture can serve together (Note [Capture plan])."""
    if rebindable is None:
        return [list(remaining)]
    groups: dict[tuple[tuple[str, int], ...], list[int]] = {}
    for i in remaining:
        key = tuple(sorted((k, v) for k, v in points[i].items() if k not in rebindable))
        groups.setdefault(key, []).append(i)
    return list(groups.values())


class _Sweep:
    """The rows and captures of a sweep so far, and the rounds that add to them."""

    def __init__(
        self,
        spec: SweepSpec,
        points: Sequence[Mapping[str, int]],
        out_dir: Path,
        progress: Progress | None,
        journal: Journal,
        finished: Finished,
    ) -> None:
        self.spec, self.points, self.out_dir, self.progress = spec, points, out_dir, progress
        self.journal = journal
        self.first = finished.last_capture + 1  # Note [Sweep resume]: after the journal's
        self.rows: list[dict[str, object]] = [r for rs in finished.rows.values() for r in rs]
        self.captures: list[CaptureRecord] = []
        self.rebindable: frozenset[str] | None = None
        self.served = len(finished.rows)

    def round(
        self,
        runner: TaskRunner,
        shipped: ShippedFile,
        limits: SweepLimits,
        remaining: Sequence[int],
        stop: threading.Event,
    ) -> list[int]:
        """One round of captures (Note [Capture plan]); returns the points still unserved."""
        spec, points = self.spec, self.points
        groups = capture_groups(remaining, points, self.rebindable)
        tasks = [
            CaptureTask(
                shipped, _options(spec), spec.archs, spec.precisions, points[g[0]],
                tuple((i, points[i]) for i in g), limits.timeout_s, limits.max_rss_mib,
                limits.reports,
            )
            for g in groups
        ]  # fmt: skip
        unserved: list[int] = []

        def landed(j: int, outcome: CaptureOutcome | TaskFailure) -> None:
            unserved.extend(self.land(groups[j], outcome))

        runner.run(run_capture, tasks, stop=stop, on_done=landed, name="solar-sweep")
        return sorted(unserved)

    def land(self, group: Sequence[int], outcome: CaptureOutcome | TaskFailure) -> tuple[int, ...]:
        """Write one capture's reports and log, keep its rows; its unserved points."""
        index, out_dir = self.first + len(self.captures), self.out_dir
        if isinstance(outcome, TaskFailure):
            outcome = CaptureOutcome(_TASK_STATUS[outcome.kind], outcome.cause)
        write_atomic(out_dir / "logs" / f"capture-{index}.log", outcome.log)
        for name, data in (outcome.reports or {}).items():
            write_atomic(out_dir / "reports" / name, data)
        if outcome.status == "ok":
            free = frozenset(outcome.rebindable)
            self.rebindable = free if self.rebindable is None else self.rebindable & free
            built = (_row(self.spec, self.points, r, index, out_dir) for r in outcome.rows)
            # the model ran in that process: a row it tampered with never reaches the table
            rows = [r for r in built if r is not None and is_valid_row(r)]
            self.rows.extend(rows)
            self.journal.record(index, rows, outcome.reports or {})  # after its reports
            done = len(group) - len(outcome.unserved)
        else:
            self.rows.extend(_failed_rows(self.spec, self.points, group, index, outcome))
            done = len(group)
        self.served += done
        record = CaptureRecord(
            index, dict(self.points[group[0]]), outcome.status, outcome.error, done,
            outcome.wall_s, outcome.capture_s, outcome.bind_s, outcome.peak_rss_mib,
        )  # fmt: skip
        self.captures.append(record)
        if self.progress is not None:
            self.progress(self.served, len(self.points), record)
        return outcome.unserved if outcome.status == "ok" else ()


def run_sweep(
    spec: SweepSpec,
    out_dir: Path,
    *,
    limits: SweepLimits | None = None,
    engine: EngineOptions | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    resume: bool = False,
) -> SweepSummary:
    """Run ``spec`` (see the module docstring); never raises for the model's faults.

    With ``resume``, the points an earlier run into ``out_dir`` finished under the same
    key are taken over, not bound again (Note [Sweep resume] in `solar.sweep.journal`).

    Raises:
        UsageError: E0901/E0902/E0943 the model file cannot be read; E0940/E0941
            ``out_dir`` cannot be written; E0908/E0932 the engine.
        HardwareSpecError: an arch that does not load.
    """
    limits, engine = limits or SweepLimits(), engine or EngineOptions()
    stop = stop or threading.Event()
    start = time.monotonic()
    points = sweep_points(spec)
    shipped = ShippedFile.of(spec.model)  # a FIFO or /dev/zero is refused unread
    try:
        key = sweep_key(spec)
    except OSError as err:
        raise UsageError(f"cannot read {spec.model}: {err.strerror}", code="E0902") from None
    prepare_output_dir(  # an unwritable --out fails before any capture
        out_dir,
        files=(f"sweep.{limits.table}", "sweep.json", "sweep.journal.jsonl"),
        folders=("reports", "logs"),
    )
    finished = (
        read_finished(out_dir, key, spec, points, reports=limits.reports)
        if resume else Finished({}, -1, [])
    )  # fmt: skip
    state = _Sweep(spec, points, out_dir, progress, Journal(out_dir, key, finished.lines), finished)
    remaining = [i for i in range(len(points)) if i not in finished.rows]
    with task_runner(engine) as runner:
        while remaining and not stop.is_set():
            remaining = state.round(runner, shipped, limits, remaining, stop)
            if state.rebindable is None:  # every capture of the round failed
                break
    rows, captures, rebindable = state.rows, state.captures, state.rebindable
    stopped = stop.is_set() and bool(remaining)
    order: dict[str, int] = {p: k for k, p in enumerate(spec.precisions)}
    # stable: within a point and precision, rows keep the --arch order they came in
    rows.sort(key=lambda r: (_int(r["point"]), order.get(str(r["precision"]), 0)))
    table = write_table(rows, spec.size_names, out_dir, limits.table)
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r["status"])] = counts.get(str(r["status"]), 0) + 1
    wall = time.monotonic() - start
    summary = {
        "format": SWEEP_FORMAT,
        "model": str(spec.model),
        "axes": {n: list(v) for n, v in spec.axes},
        "archs": list(spec.archs),
        "precisions": list(spec.precisions),
        "points": len(points),
        "resumed": len(finished.rows),
        "rebindable": sorted(rebindable or ()),
        "captures": [
            {"index": c.index, "sizes": dict(c.sizes), "status": c.status, "error": c.error,
             "served": c.served, "wall_s": c.wall_s, "capture_s": c.capture_s,
             "bind_s": c.bind_s, "peak_rss_mib": c.peak_rss_mib}
            for c in captures
        ],
        "wall_s": wall,
        "stopped": stopped,
        "table": table.name,
        "rows": rows,
    }  # fmt: skip
    json_path = write_json(summary, out_dir)
    return SweepSummary(
        len(points), tuple(rows), tuple(captures), tuple(sorted(rebindable or ())),
        table, json_path, wall, stopped, counts, len(finished.rows),
    )  # fmt: skip


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float | str) else 0


def _row(
    spec: SweepSpec,
    points: Sequence[Mapping[str, int]],
    row: Mapping[str, object],
    capture: int,
    out_dir: Path,
) -> dict[str, object] | None:
    """A worker's row as a table row (``None``: not a row of this sweep's points)."""
    index, bounds = row.get("point"), row.get("bounds_s") or {}
    if type(index) is not int or not 0 <= index < len(points) or not isinstance(bounds, dict):
        return None
    out: dict[str, object] = {
        "point": index,
        "file": str(spec.model),
        **{f"size_{k}": v for k, v in points[index].items()},
        "capture": capture,
        "resumed": False,
        **{k: v for k, v in row.items() if k not in ("bounds_s", "point", "report")},
        **{f"{m}_s": v for m, v in bounds.items()},
    }
    if row.get("report"):
        out["report"] = str(out_dir / "reports" / str(row["report"]))
    return out


def _failed_rows(
    spec: SweepSpec,
    points: Sequence[Mapping[str, int]],
    group: Sequence[int],
    capture: int,
    outcome: CaptureOutcome,
) -> list[dict[str, object]]:
    from solar.batch.job import arch_label

    return [
        {
            "point": i, "file": str(spec.model),
            **{f"size_{k}": v for k, v in points[i].items()},
            "precision": p, "arch": arch_label(a),
            "status": outcome.status, "capture": capture, "error": outcome.error,
            "resumed": False,
        }
        for i in group
        for p in spec.precisions
        for a in spec.archs
    ]  # fmt: skip
