"""Batch runs: analyse many model files, each in a fresh process, under limits.

Contract: ``files + BatchOptions -> BatchSummary``: one report per analysed file in
the output directory, a log and a row record per file, and ``summary.csv`` /
``summary.json`` with one row per file and architecture (docs/batch.md).

Guarantees (docs/reliability.md, § batch):

* isolation: every file runs in its own fresh process, so no global state (default
  dtype, matmul precision, ``sys.modules``) passes between files (Note [Batch
  isolation] in `solar.batch.runner`);
* limits: ``--timeout`` and ``--max-rss`` per file; a crash, an OOM kill, a timeout or
  the memory limit of one file is that file's row, with its cause, and every other
  file lands;
* stopping: SIGINT/SIGTERM stop the running files' processes, leave none behind and
  still write the summaries (Note [Stopping a batch] in `solar.batch.run`);
* resume: a file is reused only with the same input, options, hardware specs and
  SOLAR version (Note [Resume key] in `solar.batch.job`), with all its fields;
* helper modules that are not model files are skipped, not failed (Note [Model
  files] in `solar.batch.discover`).

`run_file` (one file -> `FileResult`) is a plain function, so any task runner can
call it; `run_batch` drives it from a thread pool (``--engine local``) or on a Dask
cluster (``--engine dask``, `solar.batch.cluster`), with the same rows, files and
resume semantics (docs/scale.md).

Error codes: E0930 no file matches; E0931 a bad limit (``--timeout``, ``--max-rss``,
``--time-budget``, ``--workers``) or no architecture; E0932 ``--scheduler`` without
``--engine dask``, or a scheduler that cannot be reached; E0908 ``--engine dask``
without Dask installed.
"""

from __future__ import annotations

from solar.batch.discover import expand_sources, is_model_file, skip_reason
from solar.batch.engine import EngineOptions, TaskFailure, run_tasks
from solar.batch.job import (
    BATCH_STATUSES,
    FAILED_STATUSES,
    BatchOptions,
    BatchRow,
    BatchStatus,
    FileResult,
)
from solar.batch.run import BatchSummary, run_batch
from solar.batch.runner import output_name, run_file
from solar.batch.summary import CSV_COLUMNS, write_summaries

__all__ = [
    "BATCH_STATUSES",
    "CSV_COLUMNS",
    "FAILED_STATUSES",
    "BatchOptions",
    "BatchRow",
    "BatchStatus",
    "BatchSummary",
    "EngineOptions",
    "FileResult",
    "TaskFailure",
    "expand_sources",
    "is_model_file",
    "output_name",
    "run_batch",
    "run_file",
    "run_tasks",
    "skip_reason",
    "write_summaries",
]
