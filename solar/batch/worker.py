"""The child process of one batch file: ``python -m solar.batch.worker JOB RESULT``.

Contract: reads the job (JSON written by `solar.batch.runner`: the file, the analysis
options, where the report goes, the limits), analyses the file with
`solar.pipeline.analyze`, writes the report atomically, then writes the result (JSON:
status, error, peak RSS) and exits 0. It never writes the result before the report is
in place, so a result always names a complete report. Anything else (a signal, an OOM
kill, ``os._exit`` in the model) leaves no result, and the parent reads the cause from
the exit status.

Before any of the user's code runs, the process (Note [Batch isolation] in
`solar.batch.runner`):

* asks the kernel to kill it if the batch dies (``PR_SET_PDEATHSIG``, Linux), so an
  abandoned analysis never outlives its batch;
* caps its writable memory at ``--max-rss`` (``RLIMIT_DATA``: an allocation above it
  fails, and the failure is reported as ``memory-limit``), disables core dumps, and
  caps any file it writes at `MAX_FILE_BYTES` (a model printing forever fills its log
  up to that size, then dies of SIGXFSZ);
* turns on `faulthandler`, so a segfault leaves a Python traceback in the file's log.

This module is a process boundary, like the CLI: it is the one place besides
`solar.cli` that catches every exception, because whatever the user's code raises must
become this file's row and never the batch's problem. `serve` and `guard_user_code`
are shared with the sweep's child (`solar.sweep.worker`).
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import resource
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from solar.files import write_atomic

__all__ = ["MAX_FILE_BYTES", "guard_user_code", "main", "peak_rss_kib", "serve"]

MAX_FILE_BYTES: Final = 256 << 20
_PR_SET_PDEATHSIG: Final = 1
_MEMORY_WORDS: Final = (
    "MemoryError",
    "Cannot allocate memory",
    "can't allocate memory",
    "Unable to allocate",
    "out of memory",
    "std::bad_alloc",
)


def _die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when the batch process goes away (Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: the parent's kill remains
        return
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(3)


def _set_limits(max_rss_bytes: int | None) -> None:
    limits = [(resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, MAX_FILE_BYTES)]
    if max_rss_bytes is not None:
        limits.append((resource.RLIMIT_DATA, max_rss_bytes))
    for kind, value in limits:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, hard))


def peak_rss_kib() -> int:
    """This process's peak resident set in KiB (``VmHWM``; ``ru_maxrss`` elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss // 1024 if sys.platform == "darwin" else maxrss


def _is_memory_failure(err: BaseException) -> bool:
    """``err`` or an exception it wraps is an allocation failure."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        text = f"{type(current).__name__}: {current}"
        if any(word in text for word in _MEMORY_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def _one_line(text: str, limit: int = 2000) -> str:
    flat = " | ".join(line.rstrip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def guard_user_code(
    job: Mapping[str, object], body: Callable[[], dict[str, object]]
) -> dict[str, object]:
    """Run ``body`` (which runs the user's code); whatever it raises becomes a result.

    A SOLAR diagnostic is ``error`` (``memory-limit`` if an allocation failed under
    ``--max-rss``), ``sys.exit`` and ``KeyboardInterrupt`` in the program are
    ``crashed``, anything else is an internal error (E0999).
    """
    from solar.diagnostics import SolarError

    limited = job.get("max_rss_bytes") is not None
    try:
        return body()
    except SolarError as err:
        status = "memory-limit" if limited and _is_memory_failure(err) else "error"
        return {"status": status, "error": _one_line(err.render())}
    except SystemExit as err:
        return {"status": "crashed", "error": f"the program called sys.exit({err.code!r})"}
    except KeyboardInterrupt:
        return {"status": "crashed", "error": "the program raised KeyboardInterrupt"}
    except Exception as err:  # noqa: BLE001 - the process boundary (module docstring)
        if limited and _is_memory_failure(err):
            return {"status": "memory-limit", "error": f"{type(err).__name__}: {err}"}
        text = f"internal error: {type(err).__name__}: {err}"
        return {"status": "error", "error": "error[E0999]: " + _one_line(text)}


def _analyse(job: dict[str, Any]) -> dict[str, object]:
    """Run the analysis; the result's status, error and report digest."""
    import hashlib

    from solar.batch.job import BatchOptions
    from solar.pipeline import analyze

    options = BatchOptions.from_analysis_fields(job["options"])

    def body() -> dict[str, object]:
        report = analyze(Path(str(job["file"])), options.analyze_options())
        display = job.get("display")
        if isinstance(display, str):  # a copy of the file ran: the report names the original
            named = report.input.model_copy(update={"path": display})
            report = report.model_copy(update={"input": named})
        data = report.to_json().encode("utf-8")
        write_atomic(Path(str(job["report"])), data)  # Note [Atomic outputs]
        return {"status": "ok", "error": None, "report_sha256": hashlib.sha256(data).hexdigest()}

    return guard_user_code(job, body)


def serve(
    argv: Sequence[str], job_format: str, run: Callable[[dict[str, object]], dict[str, object]]
) -> int:
    """A child's life: read the job, set the limits, ``run`` it, write the result.

    Args:
        argv: ``JOB RESULT`` paths.
        job_format: the job's expected ``format``.
        run: the work; returns the result (``status``, ``error``, ...), never raises
            for the user's faults (`guard_user_code`).

    Returns:
        The exit status: 0 with a result, 2 for a job of another format.
    """
    job_path, result_path = argv[:2]
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    if job.get("format") != job_format:
        return 2
    _die_with_parent(int(job["parent_pid"]))
    faulthandler.enable()
    max_rss = job.get("max_rss_bytes")
    _set_limits(int(max_rss) if max_rss is not None else None)
    result = run(job)
    result["peak_rss_kib"] = peak_rss_kib()
    sys.stdout.flush()
    write_atomic(Path(result_path), json.dumps(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``JOB RESULT`` paths. Returns the exit status (0 with a result)."""
    from solar.batch.job import JOB_FORMAT

    return serve(argv if argv is not None else sys.argv[1:], JOB_FORMAT, _analyse)


if __name__ == "__main__":
    _code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # no interpreter shutdown: threads the program left running must not keep it alive
    os._exit(_code)
