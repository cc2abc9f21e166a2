"""One capture of a sweep, as an engine task: ship the file, run the child, bring back rows.

Contract: `run_capture` ``(CaptureTask, stop) -> CaptureOutcome`` runs where the
engine puts it (a thread here, or a Dask worker: `solar.batch.engine.run_tasks`),
makes the model file available (`solar.batch.remote.materialize`), runs
``python -m solar.sweep.worker`` in a fresh process under the sweep's ``--timeout``
and ``--max-rss`` (`solar.batch.child.run_child`), and returns its rows, the
reports' bytes and the log's tail; it never raises for the model's faults (a
capture that fails is every one of its points' row, with the cause). Nothing is
written on the machine that runs it except a scratch folder.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from solar.batch.child import failure_status, run_child
from solar.batch.job import BatchStatus
from solar.batch.remote import MAX_LOG_BYTES, ShippedFile, materialize

__all__ = ["SWEEP_JOB_FORMAT", "CaptureOutcome", "CaptureTask", "run_capture"]

SWEEP_JOB_FORMAT: Final = "solar-sweep-job/1"
"""The ``format`` of a capture job (read by `solar.sweep.worker`, which nothing imports:
it runs as ``python -m``)."""


@dataclass(frozen=True, slots=True)
class CaptureTask:
    """One capture and the points to bound with it.

    Attributes:
        shipped: the model file.
        options: ``frontend``, ``validate``, ``time_budget_s``, ``entry``, ``cache``.
        archs, precisions: every served point is bounded on each.
        capture: the size binding the program is captured at.
        points: ``(index, size binding)`` the capture may serve.
        timeout_s, max_rss_mib: the child's limits.
        reports: write one JSON report per point and precision.
    """

    shipped: ShippedFile
    options: Mapping[str, object]
    archs: tuple[str, ...]
    precisions: tuple[str, ...]
    capture: Mapping[str, int]
    points: tuple[tuple[int, Mapping[str, int]], ...]
    timeout_s: float | None
    max_rss_mib: float | None
    reports: bool = True


@dataclass(frozen=True, slots=True)
class CaptureOutcome:
    """What a capture brings back.

    Attributes:
        status: ``ok`` (it ran; rows say per point), or why the capture failed.
        error: the cause of a failed capture.
        rows: per served point, precision and arch (see `solar.sweep.worker`).
        unserved: points that need another capture.
        rebindable: the sizes the program can be re-bound in.
        reports: report file name -> bytes.
        log: the child's output (tail).
        wall_s, capture_s, bind_s: the whole task; the capture (frontend, lift,
            validation, compile); binding and bounding all served points.
        peak_rss_mib: the child's peak resident memory.
    """

    status: BatchStatus
    error: str | None
    rows: tuple[dict[str, object], ...] = ()
    unserved: tuple[int, ...] = ()
    rebindable: tuple[str, ...] = ()
    reports: Mapping[str, bytes] | None = None
    log: bytes = b""
    wall_s: float = 0.0
    capture_s: float = 0.0
    bind_s: float = 0.0
    peak_rss_mib: float = 0.0


def run_capture(task: CaptureTask, stop: threading.Event) -> CaptureOutcome:
    """Run one capture in a fresh process (see the module docstring)."""
    if stop.is_set():
        return CaptureOutcome("cancelled", "the sweep stopped first")
    with (
        materialize(task.shipped) as (path, display),
        tempfile.TemporaryDirectory(prefix="solar-sweep-") as tmp,
    ):
        reports_path, log = Path(tmp) / "reports.tsv", Path(tmp) / "capture.log"
        job = {
            "format": SWEEP_JOB_FORMAT,
            "file": str(path),
            "display": display,
            "options": dict(task.options),
            "archs": list(task.archs),
            "precisions": list(task.precisions),
            "capture": dict(task.capture),
            "points": [[i, dict(p)] for i, p in task.points],
            "reports_path": str(reports_path),
            "reports": task.reports,
        }
        try:
            ended = run_child(
                "solar.sweep.worker",
                job,
                log=log,
                timeout_s=task.timeout_s,
                max_rss_mib=task.max_rss_mib,
                stop=stop,
                max_result_bytes=1 << 30,
            )
        except OSError as err:
            return CaptureOutcome("error", f"cannot run the capture: {err}")
        tail = log.read_bytes()[-MAX_LOG_BYTES:] if log.is_file() else b""
        peak = ended.peak_rss_kib / 1024.0
        result = ended.result
        if result is None or result.get("status") != "ok":
            status, cause = failure_status(
                ended,
                timeout_s=task.timeout_s,
                max_rss_mib=task.max_rss_mib,
                log=log,
                source=path,
            )
            if display is not None:
                cause = cause.replace(str(path), display)
            return CaptureOutcome(status, cause, log=tail, wall_s=ended.wall_s, peak_rss_mib=peak)
        rows, unserved, rebindable = (result.get(k) for k in ("rows", "unserved", "rebindable"))
        capture_s, bind_s = result.get("capture_s"), result.get("bind_s")
        if not (
            isinstance(capture_s, int | float)
            and isinstance(bind_s, int | float)
            and isinstance(rows, list)
            and all(isinstance(r, dict) for r in rows)
            and isinstance(unserved, list)
            and all(type(i) is int for i in unserved)
            and isinstance(rebindable, list)
            and all(type(n) is str for n in rebindable)
        ):  # the model runs in that process: what it sent back is checked like any input
            cause = "the capture's result is malformed (did the program write into it?)"
            return CaptureOutcome("error", cause, log=tail, wall_s=ended.wall_s, peak_rss_mib=peak)
        reports = _split_reports(reports_path)
    return CaptureOutcome(
        "ok",
        None,
        rows=tuple(rows),
        unserved=tuple(unserved),
        rebindable=tuple(rebindable),
        reports=reports,
        log=tail,
        wall_s=ended.wall_s,
        capture_s=float(capture_s),
        bind_s=float(bind_s),
        peak_rss_mib=peak,
    )


def _split_reports(path: Path) -> dict[str, bytes]:
    """The child's reports file (Note [Reports in one file] in `solar.sweep.worker`)."""
    if not path.is_file():
        return {}
    out: dict[str, bytes] = {}
    for line in path.read_bytes().splitlines():
        name, _, data = line.partition(b"\t")
        out[name.decode()] = data
    return out
