"""One supervised child process: start it fresh, enforce its limits, reap it and its group.

Contract: `run_child` ``(worker module, job JSON, log, limits, stop) -> ChildExit``:
starts ``python -m <module> JOB RESULT`` in its own session with its output in ``log``,
polls it every `POLL_S` seconds, kills its whole process group at ``timeout_s``, at
``max_rss_mib`` or when ``stop`` is set, and reads back the result JSON the child
wrote (none if it was killed or died). `failure_status` turns a run without a usable
result into a batch status and a one-line cause. Batch files (`solar.batch.runner`)
and sweep captures (`solar.sweep`) both run through here, so both get the guarantees
of Note [Batch isolation] in `solar.batch.runner`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from solar.batch.job import BatchStatus
from solar.files import write_atomic

__all__ = ["POLL_S", "ChildExit", "failure_status", "read_json", "run_child"]

POLL_S: Final = 0.05
_MAX_RECORD_BYTES: Final = 64 << 20
_RESULT_STATUSES: Final = ("ok", "error", "memory-limit", "crashed")
_SIGNAL_CAUSES: Final = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "floating-point exception",
    signal.SIGILL: "illegal instruction",
    signal.SIGABRT: "aborted",
    signal.SIGXFSZ: "wrote a file over the 256 MiB limit",
    signal.SIGKILL: "the kernel's OOM killer, or another process",
}


@dataclass(frozen=True, slots=True)
class ChildExit:
    """How the child ended: its result (if it wrote one), status, peak RSS, wall time."""

    result: dict[str, object] | None
    exit_code: int
    killed_for: BatchStatus | None
    peak_rss_kib: int
    wall_s: float


def run_child(
    module: str,
    job: Mapping[str, object],
    *,
    log: Path,
    timeout_s: float | None,
    max_rss_mib: float | None,
    stop: threading.Event | None = None,
    max_result_bytes: int = _MAX_RECORD_BYTES,
) -> ChildExit:
    """Run ``python -m module JOB RESULT`` fresh, under the limits (Note [Batch isolation]).

    Args:
        module: the child's module (``solar.batch.worker``, ``solar.sweep.worker``).
        job: the job, as JSON; ``parent_pid`` and ``max_rss_bytes`` are added.
        log: the child's stdout and stderr (overwritten).
        timeout_s: wall-clock limit from the start (``None``: none).
        max_rss_mib: resident-memory limit (``None``: none).
        stop: when set, the child is killed (``cancelled``).
        max_result_bytes: a larger result file is not read (no result).

    Returns:
        How it ended.

    Raises:
        OSError: the job or the log cannot be written, or the child cannot start.
    """
    max_rss_kib = int(max_rss_mib * 1024) if max_rss_mib is not None else None
    with tempfile.TemporaryDirectory(prefix="solar-batch-") as tmp:
        job_path, result_path = Path(tmp) / "job.json", Path(tmp) / "result.json"
        full = {
            **job,
            "parent_pid": os.getpid(),
            "max_rss_bytes": max_rss_kib * 1024 if max_rss_kib is not None else None,
        }
        write_atomic(job_path, json.dumps(full))
        start = time.monotonic()
        deadline = start + timeout_s if timeout_s is not None else float("inf")
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", module, str(job_path), str(result_path)],
                stdin=subprocess.DEVNULL,
                stdout=out,
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
        result = _read_result(result_path, max_result_bytes) if killed_for is None else None
    if result is not None:
        reported = result.get("peak_rss_kib")
        if isinstance(reported, int):
            peak = max(peak, reported)
    return ChildExit(result, proc.returncode, killed_for, peak, wall)


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


def read_json(path: Path, max_bytes: int = _MAX_RECORD_BYTES) -> dict[str, object] | None:
    """A JSON object from ``path``; ``None`` if missing, too large or not an object."""
    try:
        if path.stat().st_size > max_bytes:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _read_result(path: Path, max_bytes: int) -> dict[str, object] | None:
    result = read_json(path, max_bytes)
    if result is None or result.get("status") not in _RESULT_STATUSES:
        return None
    return result


def _log_hint(log: Path, source: Path) -> str:
    """What the end of a crashed child's log says: the fatal error and the program's line.

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


def _crash_cause(ended: ChildExit, max_rss_mib: float | None) -> tuple[BatchStatus, str]:
    code = ended.exit_code
    if code < 0:
        sig = signal.Signals(-code)
        cause = f"killed by {sig.name} ({_SIGNAL_CAUSES.get(sig, 'signal')})"
        near_limit = max_rss_mib is not None and ended.peak_rss_kib >= 0.9 * max_rss_mib * 1024
        if sig == signal.SIGKILL and near_limit:
            return "memory-limit", f"{cause}; peak RSS at the --max-rss limit"
        return "crashed", cause
    if code == 0:
        return "crashed", "the process exited without a result (os._exit(0) in the program?)"
    return "crashed", f"the process exited with status {code} before finishing"


def failure_status(
    ended: ChildExit,
    *,
    timeout_s: float | None,
    max_rss_mib: float | None,
    log: Path,
    source: Path,
) -> tuple[BatchStatus, str]:
    """Status and cause of a child that produced no usable result."""
    if ended.killed_for == "timeout":
        return "timeout", f"stopped at the --timeout of {timeout_s:g} s"
    if ended.killed_for == "memory-limit":
        return "memory-limit", f"stopped: resident memory over the --max-rss of {max_rss_mib:g} MiB"
    if ended.killed_for == "cancelled":
        return "cancelled", "the batch stopped while this file was running"
    result = ended.result
    if result is not None:
        status = result["status"]
        known: tuple[BatchStatus, ...] = ("error", "memory-limit", "crashed")
        return next((k for k in known if k == status), "error"), str(result.get("error"))
    status_, cause = _crash_cause(ended, max_rss_mib)
    hint = _log_hint(log, source)
    return status_, f"{cause}; log: {hint}" if hint else cause
