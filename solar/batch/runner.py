"""One batch file, analysed in a fresh process under a time and memory limit.

Contract: `run_file` ``(file, BatchOptions, out_dir) -> FileResult`` is a plain
function: it never raises for anything the file does, returns one row per
architecture, and leaves in ``out_dir`` the file's report, its log and its row record
(Note [Output layout]). `solar.batch.run_batch` calls it from a thread pool; any task
runner that can call a function can (issue 18 moves batches onto Dask).

Note [Batch isolation]
~~~~~~~~~~~~~~~~~~~~~~
Every file is analysed by its own child process, ``python -m solar.batch.worker``,
started fresh (``fork``+``exec``, never a reused worker): nothing a model does to its
interpreter -- ``torch.set_default_dtype``, ``set_float32_matmul_precision``, a
``helpers`` module in ``sys.modules``, monkey-patching, a leaked thread -- can reach
another file. The child runs in its own session (process group), with its stdout and
stderr in the file's log. The parent polls it every `POLL_S` seconds and kills the
whole process group (SIGKILL) when

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

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Final

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

__all__ = ["POLL_S", "output_name", "run_file"]

POLL_S: Final = 0.05
_MAX_RECORD_BYTES: Final = 64 << 20
_SIGNAL_CAUSES: Final = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "floating-point exception",
    signal.SIGILL: "illegal instruction",
    signal.SIGABRT: "aborted",
    signal.SIGXFSZ: "wrote a file over the 256 MiB limit",
    signal.SIGKILL: "the kernel's OOM killer, or another process",
}


def output_name(path: Path) -> str:
    """``<stem>-<8 hex>``: the name of a file's report, log and row record."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]
    return f"{path.stem}-{digest}"


@dataclass(frozen=True, slots=True)
class _Paths:
    report: Path
    report_tmp: Path
    log: Path
    record: Path

    @classmethod
    def of(cls, path: Path, out_dir: Path) -> _Paths:
        name = output_name(path)
        return cls(
            out_dir / f"{name}.json",
            out_dir / f".{name}.json.tmp",
            out_dir / "logs" / f"{name}.log",
            out_dir / "rows" / f"{name}.json",
        )


@dataclass(frozen=True, slots=True)
class _Exit:
    """How the child ended: its result (if it wrote one), status, peak RSS, wall time."""

    result: dict[str, object] | None
    exit_code: int
    killed_for: BatchStatus | None
    peak_rss_kib: int
    wall_s: float


def run_file(
    path: Path,
    options: BatchOptions,
    out_dir: Path,
    *,
    stop: threading.Event | None = None,
) -> FileResult:
    """Analyse one file in a fresh process (Note [Batch isolation]).

    Args:
        path: the model or IR file.
        options: analysis options, limits and ``resume``.
        out_dir: where the report, log and row record go (Note [Output layout]).
        stop: when set, the file is cancelled (killed if running).

    Returns:
        The file's status and one row per architecture. Never raises for the file's
        own faults; an ``out_dir`` that cannot be written is an ``error`` row.
    """
    file = str(path)
    if stop is not None and stop.is_set():
        return failure_rows(file, options.archs, "cancelled", "the batch stopped first")
    reason = skip_reason(path, entry=options.entry)
    if reason is not None:
        return failure_rows(file, options.archs, "skipped", reason)
    paths = _Paths.of(path, out_dir)
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
        paths.log.parent.mkdir(parents=True, exist_ok=True)
        ended = _supervise(path, options, paths, stop)
    except OSError as err:
        return failure_rows(file, options.archs, "error", f"cannot run the analysis: {err}")
    finally:  # what a killed worker left: its temporary report (Note [Atomic outputs])
        paths.report_tmp.unlink(missing_ok=True)
        for stale in paths.report.parent.glob(f".{paths.report.name}.*.tmp"):
            stale.unlink(missing_ok=True)
    outcome = _outcome(path, options, paths, ended)
    if outcome.status in ("ok", "validation-failed") and ended.result is not None:
        _store_record(paths, key, str(ended.result.get("report_sha256")), outcome.rows)
    return outcome


def _supervise(
    path: Path, options: BatchOptions, paths: _Paths, stop: threading.Event | None
) -> _Exit:
    """Start the worker, enforce the limits, reap it and its process group."""
    max_rss_kib = int(options.max_rss_mib * 1024) if options.max_rss_mib is not None else None
    with tempfile.TemporaryDirectory(prefix="solar-batch-") as tmp:
        job_path, result_path = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job = {
            "format": JOB_FORMAT,
            "file": str(path),  # as given, like `solar analyze` (the child shares our cwd)
            "options": options.analysis_fields(),
            "report": str(paths.report),
            "report_tmp": str(paths.report_tmp),
            "parent_pid": os.getpid(),
            "max_rss_bytes": max_rss_kib * 1024 if max_rss_kib is not None else None,
        }
        write_atomic(job_path, json.dumps(job))
        start = time.monotonic()
        deadline = start + options.timeout_s if options.timeout_s is not None else float("inf")
        with paths.log.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "solar.batch.worker", str(job_path), str(result_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_child_env(),
            )
        killed_for: BatchStatus | None = None
        peak, reaped, status = 0, False, 0
        try:
            while not reaped:
                pid, status, _usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    reaped = True
                    break
                rss, hwm = _memory_kib(proc.pid)
                peak = max(peak, hwm)
                killed_for = _limit_hit(stop, deadline, rss, max_rss_kib)
                if killed_for is not None:
                    _kill_group(proc.pid)
                    _pid, status, _usage = os.wait4(proc.pid, 0)
                    reaped = True
                elif stop is not None:
                    stop.wait(POLL_S)
                else:
                    time.sleep(POLL_S)
        finally:
            _kill_group(proc.pid)  # the child if still running, and whatever it started
            if not reaped:  # an exception in the loop above: leave no zombie either
                _pid, status, _usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        result = _read_result(result_path) if killed_for is None else None
    if result is not None:
        reported = result.get("peak_rss_kib")
        if isinstance(reported, int):
            peak = max(peak, reported)
    return _Exit(result, proc.returncode, killed_for, peak, wall)


def _limit_hit(
    stop: threading.Event | None, deadline: float, rss_kib: int, max_rss_kib: int | None
) -> BatchStatus | None:
    """Why the child must be stopped now, if it must."""
    if stop is not None and stop.is_set():
        return "cancelled"
    if time.monotonic() > deadline:
        return "timeout"
    if max_rss_kib is not None and rss_kib > max_rss_kib:
        return "memory-limit"
    return None


def _child_env() -> dict[str, str]:
    """The environment, with SOLAR's own import root first (a source checkout works too)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONFAULTHANDLER", "1")
    return env


def _memory_kib(pid: int) -> tuple[int, int]:
    """``(VmRSS, VmHWM)`` of a process in KiB, ``(0, 0)`` where /proc has no answer."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return rss, hwm


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        if path.stat().st_size > _MAX_RECORD_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _read_result(path: Path) -> dict[str, object] | None:
    result = _read_json(path)
    if result is None or result.get("status") not in ("ok", "error", "memory-limit", "crashed"):
        return None
    return result


def _log_hint(log: Path, source: Path) -> str:
    """What the end of a crashed file's log says: the fatal error and the program's line.

    ``faulthandler`` writes ``Fatal Python error: Segmentation fault`` and a traceback
    (innermost first); the first frame in ``source`` says where. Otherwise the last
    non-blank line, shortened.
    """
    try:
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - 16384))
            lines = [ln.strip() for ln in fh.read().decode("utf-8", "replace").splitlines()]
    except OSError:
        return ""
    fatal = next((ln for ln in reversed(lines) if ln.startswith("Fatal Python error:")), None)
    if fatal is not None:
        frames = tuple(f'File "{name}", line ' for name in {str(source), str(source.resolve())})
        where = next((ln for ln in lines if ln.startswith(frames)), None)
        line = where.split(", line ", 1)[1].split()[0] if where else None
        return f"{fatal} at {source}:{line}" if line else fatal
    last = next((ln for ln in reversed(lines) if ln), "")
    return last if len(last) <= 200 else last[:197] + "..."


def _crash_cause(ended: _Exit, options: BatchOptions) -> tuple[BatchStatus, str]:
    code = ended.exit_code
    if code < 0:
        sig = signal.Signals(-code)
        cause = f"killed by {sig.name} ({_SIGNAL_CAUSES.get(sig, 'signal')})"
        near_limit = (
            options.max_rss_mib is not None
            and ended.peak_rss_kib >= 0.9 * options.max_rss_mib * 1024
        )
        if sig == signal.SIGKILL and near_limit:
            return "memory-limit", f"{cause}; peak RSS at the --max-rss limit"
        return "crashed", cause
    if code == 0:
        return "crashed", "the process exited without a result (os._exit(0) in the program?)"
    return "crashed", f"the process exited with status {code} before finishing"


def _failure(
    ended: _Exit, options: BatchOptions, log: Path, source: Path
) -> tuple[BatchStatus, str]:
    """Status and cause of a file whose analysis produced no report."""
    if ended.killed_for == "timeout":
        return "timeout", f"stopped at the --timeout of {options.timeout_s:g} s"
    if ended.killed_for == "memory-limit":
        limit = f"{options.max_rss_mib:g} MiB"
        return "memory-limit", f"stopped: resident memory over the --max-rss of {limit}"
    if ended.killed_for == "cancelled":
        return "cancelled", "the batch stopped while this file was running"
    result = ended.result
    if result is not None:
        status = result["status"]
        known: tuple[BatchStatus, ...] = ("error", "memory-limit", "crashed")
        return next((k for k in known if k == status), "error"), str(result.get("error"))
    status_, cause = _crash_cause(ended, options)
    hint = _log_hint(log, source)
    return status_, f"{cause}; log: {hint}" if hint else cause


def _outcome(path: Path, options: BatchOptions, paths: _Paths, ended: _Exit) -> FileResult:
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
        status, message = _failure(ended, options, paths.log, path)
    return failure_rows(
        file, archs, status, message, log=paths.log, wall_s=ended.wall_s, peak_rss_mib=peak_mib
    )


def _store_record(paths: _Paths, key: str, report_sha256: str, rows: tuple[BatchRow, ...]) -> None:
    record = {
        "format": ROW_FORMAT,
        "key": key,
        "report_sha256": report_sha256,
        "rows": [asdict(r) for r in rows],
    }
    write_atomic(paths.record, json.dumps(record, indent=2, sort_keys=True) + "\n")


def _load_record(paths: _Paths, key: str, file: str) -> FileResult | None:
    """The finished rows of an earlier run with the same key and an unchanged report."""
    record = _read_json(paths.record)
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
