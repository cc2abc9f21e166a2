"""One batch file, analysed in a fresh process under a time and memory limit.

Contract: `run_file` ``(file, BatchOptions, out_dir) -> FileResult`` is a plain
function: it never raises for anything the file does, returns one row per
architecture, and leaves in ``out_dir`` the file's report, its log and its row record
(Note [Output layout]). `solar.batch.run_batch` calls it from a thread pool. On a Dask
cluster the same function runs on a worker, into a scratch directory, and
`precheck_file`/`land_file` do the parts that touch ``out_dir`` on the client
(`solar.batch.remote`).

Note [Batch isolation]
~~~~~~~~~~~~~~~~~~~~~~
Every file is analysed by its own child process, ``python -m solar.batch.worker``,
started fresh (``fork``+``exec``, never a reused worker): nothing a model does to its
interpreter -- ``torch.set_default_dtype``, ``set_float32_matmul_precision``, a
``helpers`` module in ``sys.modules``, monkey-patching, a leaked thread -- can reach
another file. The child runs in its own session (process group), with its stdout and
stderr in the file's log. The parent (`solar.batch.child.run_child`) polls it every
`POLL_S` seconds and kills the whole process group (SIGKILL) when

* ``--timeout`` passes (status ``timeout``),
* its resident set goes over ``--max-rss`` (``memory-limit``; the child also caps its
  writable memory with ``RLIMIT_DATA``, so a fast allocation fails there instead), or
* the batch is stopping (SIGINT/SIGTERM to the batch; ``cancelled``).

After the child ends, its process group is killed again, so nothing it started
survives; the child itself dies with the batch even if the batch is SIGKILLed
(``PR_SET_PDEATHSIG``). A child that dies without a result is ``crashed``, with the
cause read from its exit status (signal name, OOM kill, exit code) and the last line
of its log. The cost is a fresh interpreter (and torch or jax import) per file.

Note [Output layout]
~~~~~~~~~~~~~~~~~~~~
For an input ``models/a/model.py`` the files are named ``model-<8 hex>`` (the hex
digits hash the input's absolute path, so two ``model.py`` in different folders never
collide): ``out/model-<hex>.json`` (the report), ``out/logs/model-<hex>.log`` (the
file's stdout and stderr, overwritten per run) and ``out/rows/model-<hex>.json`` (the
row record ``--resume`` reads: format, resume key, the report's SHA-256 and the rows).
A file that is redone first loses its old report and row record, so a stale report
never sits next to a new failure.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from solar.batch.child import POLL_S, ChildExit, failure_status, read_json, run_child
from solar.batch.discover import skip_reason
from solar.batch.job import (
    JOB_FORMAT,
    ROW_FORMAT,
    BatchOptions,
    BatchRow,
    BatchStatus,
    FileResult,
    failure_rows,
    file_sha256,
    resume_key,
    rows_from_report,
)
from solar.diagnostics import HardwareSpecError
from solar.files import write_atomic

__all__ = [
    "POLL_S",
    "FilePaths",
    "PendingFile",
    "land_file",
    "output_name",
    "precheck_file",
    "run_file",
]


def output_name(path: Path) -> str:
    """``<stem>-<8 hex>``: the name of a file's report, log and row record."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    return f"{path.stem}-{digest}"


@dataclass(frozen=True, slots=True)
class FilePaths:
    """Where one file's report, log and row record go (Note [Output layout])."""

    report: Path
    report_tmp: Path
    log: Path
    record: Path

    @classmethod
    def of(cls, path: Path, out_dir: Path) -> FilePaths:
        """The paths of ``path``'s outputs in ``out_dir``."""
        name = output_name(path)
        return cls(
            out_dir / f"{name}.json",
            out_dir / f".{name}.json.tmp",
            out_dir / "logs" / f"{name}.log",
            out_dir / "rows" / f"{name}.json",
        )


@dataclass(frozen=True, slots=True)
class PendingFile:
    """A file that must be analysed: its resume key and output paths."""

    path: Path
    key: str
    paths: FilePaths


def precheck_file(path: Path, options: BatchOptions, out_dir: Path) -> FileResult | PendingFile:
    """What needs no analysis: a skipped, unreadable or resumed file; else what to analyse.

    A pending file has lost its stale report and row record (Note [Output layout]).
    """
    file = str(path)
    reason = skip_reason(path, entry=options.entry)
    if reason is not None:
        return failure_rows(file, options.archs, "skipped", reason)
    paths = FilePaths.of(path, out_dir)
    try:
        key = resume_key(file_sha256(path), options)
    except (OSError, HardwareSpecError) as err:
        return failure_rows(file, options.archs, "error", f"cannot read the input: {err}")
    if options.resume:
        resumed = _load_record(paths, key, file)
        if resumed is not None:
            return resumed
    try:
        for stale in (paths.report, paths.record, paths.report_tmp):
            stale.unlink(missing_ok=True)
    except OSError as err:
        return failure_rows(file, options.archs, "error", f"cannot run the analysis: {err}")
    return PendingFile(path, key, paths)


def run_file(
    path: Path,
    options: BatchOptions,
    out_dir: Path,
    *,
    stop: threading.Event | None = None,
    display: str | None = None,
) -> FileResult:
    """Analyse one file in a fresh process (Note [Batch isolation]).

    Args:
        path: the model or IR file.
        options: analysis options, limits and ``resume``.
        out_dir: where the report, log and row record go (Note [Output layout]).
        stop: when set, the file is cancelled (killed if running).
        display: the path the report names as its input (default: ``path`` as given);
            a Dask worker running a copy of the file names the original.

    Returns:
        The file's status and one row per architecture. Never raises for the file's
        own faults; an ``out_dir`` that cannot be written is an ``error`` row.
    """
    if stop is not None and stop.is_set():
        return failure_rows(str(path), options.archs, "cancelled", "the batch stopped first")
    pending = precheck_file(path, options, out_dir)
    if isinstance(pending, FileResult):
        return pending
    paths = pending.paths
    try:
        paths.log.parent.mkdir(parents=True, exist_ok=True)
        ended = _supervise(path, options, paths, stop, display)
    except OSError as err:
        return failure_rows(str(path), options.archs, "error", f"cannot run the analysis: {err}")
    finally:  # what a killed worker left: its temporary report (Note [Atomic outputs])
        paths.report_tmp.unlink(missing_ok=True)
        for stale in paths.report.parent.glob(f".{paths.report.name}.*.tmp"):
            stale.unlink(missing_ok=True)
    outcome = _outcome(path, options, paths, ended)
    if outcome.status in ("ok", "validation-failed") and ended.result is not None:
        _store_record(paths, pending.key, str(ended.result.get("report_sha256")), outcome.rows)
    return outcome


def land_file(
    pending: PendingFile, result: FileResult, report: bytes | None, log: bytes
) -> FileResult:
    """Write a file analysed elsewhere into ``out_dir``: report, log, row record.

    ``result`` is what `run_file` returned on the worker; its rows are re-pointed at
    the client's paths, and its row record is stored as `run_file` would have.

    Raises:
        OSError: ``out_dir`` cannot be written.
    """
    paths = pending.paths
    paths.log.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(paths.log, log)
    if report is not None:
        write_atomic(paths.report, report.decode("utf-8"))
    rows = tuple(
        replace(
            r,
            report=str(paths.report) if report is not None and r.report else None,
            log=str(paths.log),
        )
        for r in result.rows
    )
    landed = replace(result, rows=rows)
    if landed.status in ("ok", "validation-failed") and report is not None:
        _store_record(paths, pending.key, hashlib.sha256(report).hexdigest(), rows)
    return landed


def _supervise(
    path: Path,
    options: BatchOptions,
    paths: FilePaths,
    stop: threading.Event | None,
    display: str | None,
) -> ChildExit:
    """Start the worker, enforce the limits, reap it and its process group."""
    job = {
        "format": JOB_FORMAT,
        "file": str(path),  # as given, like `solar analyze` (the child shares our cwd)
        "display": display,
        "options": options.analysis_fields(),
        "report": str(paths.report),
        "report_tmp": str(paths.report_tmp),
    }
    return run_child(
        "solar.batch.worker",
        job,
        log=paths.log,
        timeout_s=options.timeout_s,
        max_rss_mib=options.max_rss_mib,
        stop=stop,
    )


def _outcome(path: Path, options: BatchOptions, paths: FilePaths, ended: ChildExit) -> FileResult:
    file, archs, peak_mib = str(path), options.archs, ended.peak_rss_kib / 1024.0
    if ended.result is not None and ended.result["status"] == "ok":
        from solar.report import Report

        try:
            report = Report.model_validate_json(paths.report.read_bytes())
        except (OSError, ValueError) as err:
            status: BatchStatus = "error"
            message = f"the report cannot be read back: {err}"
        else:
            return rows_from_report(
                report,
                file=file,
                report_path=paths.report,
                log=paths.log,
                archs=archs,
                wall_s=ended.wall_s,
                peak_rss_mib=peak_mib,
            )
    else:
        status, message = failure_status(
            ended,
            timeout_s=options.timeout_s,
            max_rss_mib=options.max_rss_mib,
            log=paths.log,
            source=path,
        )
    return failure_rows(
        file, archs, status, message, log=paths.log, wall_s=ended.wall_s, peak_rss_mib=peak_mib
    )


def _store_record(
    paths: FilePaths, key: str, report_sha256: str, rows: tuple[BatchRow, ...]
) -> None:
    record = {
        "format": ROW_FORMAT,
        "key": key,
        "report_sha256": report_sha256,
        "rows": [asdict(r) for r in rows],
    }
    write_atomic(paths.record, json.dumps(record, indent=2, sort_keys=True) + "\n")


def _load_record(paths: FilePaths, key: str, file: str) -> FileResult | None:
    """The finished rows of an earlier run with the same key and an unchanged report."""
    record = read_json(paths.record)
    if record is None or record.get("format") != ROW_FORMAT or record.get("key") != key:
        return None
    try:
        if file_sha256(paths.report) != record.get("report_sha256"):
            return None
        raw_rows = record["rows"]
        if not isinstance(raw_rows, list) or not raw_rows:
            return None
        rows = tuple(replace(BatchRow(**row), file=file, resumed=True) for row in raw_rows)
    except (OSError, TypeError, KeyError):
        return None
    status = rows[0].status
    if status not in ("ok", "validation-failed") or any(r.status != status for r in rows):
        return None
    return FileResult(file, status, rows, resumed=True)
