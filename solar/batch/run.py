"""Run `run_file` over many files, a few at a time, and stop cleanly on SIGINT/SIGTERM.

Contract: ``files + BatchOptions (+ EngineOptions) -> BatchSummary``, the same rows,
files and resume semantics on either engine (`solar.batch.engine`):

* ``local``: a `concurrent.futures.ThreadPoolExecutor`; each of its threads runs
  `run_file`, which starts and supervises one child process (Note [Batch isolation]);
* ``dask``: the client does what touches ``--out`` (`precheck_file`: skipped and
  resumed files never leave it; `land_file`: reports, logs and row records), and each
  remaining file travels to a Dask worker (`solar.batch.remote`), where the same
  `run_file` analyses it in a fresh child process under the same limits. A file
  whose workers kept dying is ``crashed`` (Note [Retries] in `solar.batch.cluster`).

The engines schedule; nothing here does.

Note [Stopping a batch]
~~~~~~~~~~~~~~~~~~~~~~~
While `run_batch` runs in the main thread, SIGINT, SIGTERM and SIGHUP do not raise in
it: they set a stop event. Every running `run_file` sees it within `POLL_S`, kills its
child's process group and returns ``cancelled`` rows; files not started yet return
``cancelled`` at once. The summaries are then written as usual (every finished file
keeps its rows, its report and its row record, so ``--resume`` picks up from there),
and `BatchSummary.stopped_by` names the signal. The previous handlers are restored on
the way out.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from solar.batch.engine import EngineOptions, TaskFailure, run_tasks
from solar.batch.job import BatchOptions, BatchRow, BatchStatus, FileResult, failure_rows
from solar.batch.remote import RemoteFileResult, ShippedFile, run_shipped_file
from solar.batch.runner import PendingFile, land_file, precheck_file, run_file
from solar.batch.summary import write_summaries
from solar.diagnostics import UsageError
from solar.files import prepare_output_dir

__all__ = ["BatchSummary", "run_batch"]

_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """Every file's result, in input order, and where the summaries were written.

    Attributes:
        files: one `FileResult` per input file.
        csv_path, json_path: ``summary.csv`` and ``summary.json``.
        stopped_by: the signal that stopped the batch (``"SIGTERM"``...), if one did.
    """

    files: tuple[FileResult, ...]
    csv_path: Path
    json_path: Path
    stopped_by: str | None = None

    @property
    def rows(self) -> tuple[BatchRow, ...]:
        """All rows: per file, one per architecture."""
        return tuple(r for f in self.files for r in f.rows)

    @property
    def failed(self) -> int:
        """Files that errored, timed out, hit the memory limit or crashed."""
        return sum(f.failed for f in self.files)

    def count(self, *statuses: str) -> int:
        """Files with one of ``statuses``."""
        return sum(f.status in statuses for f in self.files)


@contextlib.contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[list[str]]:
    """SIGINT/SIGTERM/SIGHUP set ``stop`` (main thread only; Note [Stopping a batch])."""
    received: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        received.append(signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in _STOP_SIGNALS}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_batch(
    files: Sequence[Path],
    options: BatchOptions,
    out_dir: Path,
    *,
    workers: int = 2,
    engine: EngineOptions | None = None,
    progress: Callable[[int, int, FileResult], None] | None = None,
    stop: threading.Event | None = None,
) -> BatchSummary:
    """Analyse ``files``, ``workers`` at a time, each in a fresh process.

    Args:
        files: model and IR files (see `expand_sources`); repeats are dropped.
        options: analysis options and limits, the same for every file.
        out_dir: reports, logs, row records and summaries (created if needed).
        workers: files analysed at the same time (when ``engine`` is not given).
        engine: where the files run (default: ``local`` with ``workers``).
        progress: called in the calling thread after each file, with
            ``(files done, total, result)``.
        stop: set it to stop the batch (signals set it too, Note [Stopping a batch]).

    Returns:
        The results and the summary paths; the batch never raises for a file's fault.

    Raises:
        UsageError: E0940/E0941 ``out_dir`` cannot take the outputs; the ``dask``
            engine without Dask (E0908) or its scheduler (E0932).
    """
    engine = engine or EngineOptions(workers=max(1, workers))
    # an unwritable --out fails here, not after every file was analysed
    prepare_output_dir(out_dir, files=("summary.csv", "summary.json"), folders=("logs",))
    files = list(dict.fromkeys(files))  # a file listed twice is analysed once
    stop = stop or threading.Event()
    results: dict[int, FileResult] = {}

    def record(i: int, result: FileResult) -> None:
        results[i] = result
        if progress is not None:
            progress(len(results), len(files), result)

    with _stop_on_signals(stop) as received:
        if engine.engine == "local":
            task = functools.partial(_run_here, options=options, out_dir=out_dir)
            run_tasks(task, files, engine, stop=stop, on_done=_local(record), name="solar-batch")
        else:
            _run_elsewhere(files, options, out_dir, engine, stop, record)
    ordered = tuple(results[i] for i in range(len(files)))
    csv_path, json_path = write_summaries([r for f in ordered for r in f.rows], out_dir)
    return BatchSummary(ordered, csv_path, json_path, received[0] if received else None)


def _run_here(
    path: Path, stop: threading.Event, *, options: BatchOptions, out_dir: Path
) -> FileResult:
    return run_file(path, options, out_dir, stop=stop)


def _local(
    record: Callable[[int, FileResult], None],
) -> Callable[[int, FileResult | TaskFailure], None]:
    """``record`` for the local engine, whose tasks always return a result."""

    def done(i: int, outcome: FileResult | TaskFailure) -> None:
        assert isinstance(outcome, FileResult), "the local engine returns every outcome"
        record(i, outcome)

    return done


_TASK_STATUS: dict[str, BatchStatus] = {
    "lost-worker": "crashed",
    "cancelled": "cancelled",
    "internal": "error",
}


def _run_elsewhere(
    files: Sequence[Path],
    options: BatchOptions,
    out_dir: Path,
    engine: EngineOptions,
    stop: threading.Event,
    record: Callable[[int, FileResult], None],
) -> None:
    """The ``dask`` engine: check and land on this machine, analyse on the workers."""
    todo: list[tuple[int, PendingFile, ShippedFile]] = []
    for i, path in enumerate(files):
        if stop.is_set():
            record(
                i, failure_rows(str(path), options.archs, "cancelled", "the batch stopped first")
            )
            continue
        checked = precheck_file(path, options, out_dir)
        if isinstance(checked, FileResult):
            record(i, checked)
            continue
        try:
            todo.append((i, checked, ShippedFile.of(path)))
        except UsageError as err:  # that file alone fails; the others are shipped
            record(i, failure_rows(str(path), options.archs, "error", err.message))

    def landed(j: int, outcome: RemoteFileResult | TaskFailure) -> None:
        i, pending, _shipped = todo[j]
        if isinstance(outcome, TaskFailure):
            status = _TASK_STATUS[outcome.kind]
            record(i, failure_rows(str(pending.path), options.archs, status, outcome.cause))
        else:
            record(i, land_file(pending, outcome.result, outcome.report, outcome.log))

    task = functools.partial(run_shipped_file, options=options)
    shipped = [s for _i, _p, s in todo]
    run_tasks(task, shipped, engine, stop=stop, on_done=landed, name="solar-batch")
