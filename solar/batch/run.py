"""Run `run_file` over many files, a few at a time, and stop cleanly on SIGINT/SIGTERM.

Contract: ``files + BatchOptions -> BatchSummary``. Concurrency is a standard
`concurrent.futures.ThreadPoolExecutor`: each of its threads runs `run_file`, which
starts and supervises one child process (Note [Batch isolation]); the pool schedules,
nothing here does.

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

import concurrent.futures as cf
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from solar.batch.job import BatchOptions, BatchRow, FileResult
from solar.batch.runner import run_file
from solar.batch.summary import write_summaries

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
    progress: Callable[[int, int, FileResult], None] | None = None,
    stop: threading.Event | None = None,
) -> BatchSummary:
    """Analyse ``files``, ``workers`` at a time, each in a fresh process.

    Args:
        files: model and IR files (see `expand_sources`); repeats are dropped.
        options: analysis options and limits, the same for every file.
        out_dir: reports, logs, row records and summaries (created if needed).
        workers: files analysed at the same time.
        progress: called in the calling thread after each file, with
            ``(files done, total, result)``.
        stop: set it to stop the batch (signals set it too, Note [Stopping a batch]).

    Returns:
        The results and the summary paths; the batch never raises for a file's fault.

    Raises:
        OSError: ``out_dir`` cannot be created or the summaries cannot be written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    files = list(dict.fromkeys(files))  # a file listed twice is analysed once
    stop = stop or threading.Event()
    results: dict[int, FileResult] = {}
    with _stop_on_signals(stop) as received:
        pool = cf.ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="solar-batch")
        try:
            futures = {
                pool.submit(run_file, f, options, out_dir, stop=stop): i
                for i, f in enumerate(files)
            }
            for future in cf.as_completed(futures):
                results[futures[future]] = future.result()
                if progress is not None:
                    progress(len(results), len(files), results[futures[future]])
        except BaseException:
            stop.set()  # a bug or an unwritable out_dir: stop the children before raising
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=False)
    ordered = tuple(results[i] for i in range(len(files)))
    csv_path, json_path = write_summaries([r for f in ordered for r in f.rows], out_dir)
    return BatchSummary(ordered, csv_path, json_path, received[0] if received else None)
