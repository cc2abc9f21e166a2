"""A batch file analysed on another machine: what travels, and how it lands.

Contract: `ShippedFile.of(path)` is what the client sends per file: the path as
given, its absolute path and the file's bytes (a model file is a few KiB; the
model's weights and data are never sent: the worker builds the model from its
constructor, as `solar analyze` does). On the worker, `run_shipped_file` runs the
ordinary `solar.batch.run_file` (a fresh process under ``--timeout``/``--max-rss``)
into a scratch directory and returns the rows, the report's bytes and the log's
tail; on the client, `solar.batch.runner.land_file` writes them into ``--out``.

Note [Which copy runs]
~~~~~~~~~~~~~~~~~~~~~~
A worker runs the file in place when it sees the very same file (same SHA-256) at
the path as given (a ``LocalCluster``, or a shared file system with the same working
directory) -- then the report and any diagnostic are exactly those of the
``local`` engine -- else at its absolute path (a shared file system), else a copy
of the shipped bytes in a scratch folder. In the last two cases the report names
the path as given, and diagnostics that quote the worker's path are rewritten to
it; a model file that imports sibling modules needs them on the worker, so run
from a shared file system (docs/scale.md).
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from solar.batch.job import BatchOptions, FileResult, file_sha256
from solar.batch.runner import FilePaths, run_file

__all__ = ["MAX_LOG_BYTES", "RemoteFileResult", "ShippedFile", "materialize", "run_shipped_file"]

MAX_LOG_BYTES: Final = 8 << 20
"""A log's tail sent back from a worker (the whole log up to this size)."""


@dataclass(frozen=True, slots=True)
class ShippedFile:
    """A source file as it travels to a worker.

    Attributes:
        given: the path as the user gave it.
        absolute: its absolute path on the client.
        data: the file's bytes.
        sha256: their SHA-256.
    """

    given: str
    absolute: str
    data: bytes
    sha256: str

    @classmethod
    def of(cls, path: Path) -> ShippedFile:
        """Read ``path``, a regular file of at most `solar.files.MAX_TEXT_BYTES`, before
        anything else (Note [Guarded reads]).

        Raises:
            UsageError: E0901 missing; E0902 unreadable or not a regular file; E0943
                too large.
        """
        import hashlib

        from solar.files import read_bytes

        data = read_bytes(path)

        return cls(str(path), str(path.resolve()), data, hashlib.sha256(data).hexdigest())


@dataclass(frozen=True, slots=True)
class RemoteFileResult:
    """What a worker sends back for one file: rows, report bytes, the log's tail."""

    result: FileResult
    report: bytes | None
    log: bytes


def _is_same(path: Path, shipped: ShippedFile) -> bool:
    try:
        return (
            path.is_file()
            and path.stat().st_size == len(shipped.data)
            and file_sha256(path) == shipped.sha256
        )
    except OSError:
        return False


@contextlib.contextmanager
def materialize(shipped: ShippedFile) -> Iterator[tuple[Path, str | None]]:
    """The file on this machine (Note [Which copy runs]): ``(path, display)``.

    ``display`` is the path as given when a copy or the absolute path runs, else ``None``.
    """
    given = Path(shipped.given)
    if _is_same(given, shipped):
        yield given, None
        return
    absolute = Path(shipped.absolute)
    if _is_same(absolute, shipped):
        yield absolute, shipped.given
        return
    with tempfile.TemporaryDirectory(prefix="solar-shipped-") as tmp:
        copy = Path(tmp) / given.name
        copy.write_bytes(shipped.data)
        yield copy, shipped.given


def _read_tail(path: Path, limit: int) -> bytes:
    try:
        with path.open("rb") as fh:
            size = path.stat().st_size
            fh.seek(max(0, size - limit))
            return fh.read()
    except OSError:
        return b""


def run_shipped_file(
    shipped: ShippedFile, stop: threading.Event, *, options: BatchOptions
) -> RemoteFileResult:
    """On a worker: `run_file` on this machine's copy, into a scratch directory.

    Never raises for the file's own faults (`run_file`'s contract); ``options.resume``
    is ignored (the client decided what to run).
    """
    options = replace(options, resume=False)
    with (
        materialize(shipped) as (path, display),
        tempfile.TemporaryDirectory(prefix="solar-out-") as out,
    ):
        result = run_file(path, options, Path(out), stop=stop, display=display)
        paths = FilePaths.of(path, Path(out))
        report = None
        if result.rows and result.rows[0].report:
            try:
                report = paths.report.read_bytes()
            except OSError:
                report = None
        log = _read_tail(paths.log, MAX_LOG_BYTES)
        local = {str(path), str(path.resolve())} if display is not None else set()

    def named(error: str | None) -> str | None:
        for text in sorted(local, key=len, reverse=True):
            error = error.replace(text, shipped.given) if error else error
        return error

    rows = tuple(replace(r, file=shipped.given, error=named(r.error)) for r in result.rows)
    return RemoteFileResult(replace(result, file=shipped.given, rows=rows), report, log)
