"""File boundaries: reading the user's files and writing SOLAR's outputs atomically.

Contract: ``Path -> str | arrays`` for reading, ``(Path, data) -> Path`` for writing.
Every failure is a coded `UsageError` (exit 2), never a raw ``OSError``:

=====  ==================================================================================
E0901  no such file
E0902  the file cannot be read as text (a directory, no permission, not UTF-8 text)
E0940  an output path names an existing directory
E0941  an output cannot be written (no permission, disk full, a parent is not a directory)
E0942  an ``.npz`` archive is invalid (corrupt, empty, a bare ``.npy`` array, pickled
       objects, a member that is not an array)
=====  ==================================================================================

Note [Atomic outputs]: every file SOLAR writes (reports, ``--save-ir``, plots, JUnit,
summaries, calibrated specs, ``ir run`` outputs) goes through `atomic_output`, which
writes a temporary file in the target's own directory, flushes it to disk and renames
it over the target with `os.replace`. A reader sees the old file or the new one, never
an empty or half-written one, and a failed write leaves the old file untouched. A
missing parent directory is created. A target that exists but is not a regular file
(``/dev/stdout``, a FIFO) is written in place: there is nothing to rename over. A
symbolic link is followed, so the link keeps pointing at the new file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tokenize
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

from solar.diagnostics import UsageError

__all__ = [
    "append_atomic",
    "atomic_output",
    "load_npz",
    "prepare_output",
    "read_text",
    "write_atomic",
]

# What numpy raises for a damaged archive (found by truncating and flipping bytes).
_NPZ_ERRORS = (
    ValueError,
    EOFError,
    zipfile.BadZipFile,
    zlib.error,
    tokenize.TokenError,
    SyntaxError,
    NotImplementedError,
    KeyError,
)


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``.

    Raises:
        UsageError: E0901 missing file; E0902 unreadable or not UTF-8 text.
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", code="E0901") from None
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: it is a directory", code="E0902") from None
    except UnicodeDecodeError as err:
        raise UsageError(
            f"cannot read {path}: not UTF-8 text (invalid byte at offset {err.start})",
            code="E0902",
        ) from None
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}", code="E0902") from None


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, by name (pickled objects are refused).

    Raises:
        UsageError: E0901 missing file; E0902 unreadable; E0942 not a valid archive.
    """
    if not path.exists():
        raise UsageError(f"no such file: {path}", code="E0901")
    if path.is_dir():
        raise UsageError(f"cannot read {path}: it is a directory", code="E0902")
    try:
        loaded = np.load(path, allow_pickle=False)
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}", code="E0902") from None
    except _NPZ_ERRORS as err:
        raise _bad_npz(path, err) from None
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise UsageError(
            f"{path} is a single .npy array, not an .npz archive of named arrays",
            code="E0942",
            notes=("write one with numpy.savez(path, name=array, ...)",),
        )
    with loaded as data:
        try:
            arrays = {k: data[k] for k in data.files}
        except (OSError, *_NPZ_ERRORS) as err:
            raise _bad_npz(path, err) from None
    for name, value in arrays.items():
        if not isinstance(value, np.ndarray):
            raise UsageError(f"{path}: member `{name}` is not a .npy array", code="E0942")
    return arrays


def _bad_npz(path: Path, err: BaseException) -> UsageError:
    detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if isinstance(err, EOFError) or (path.is_file() and path.stat().st_size == 0):
        detail = "the file is empty"
    return UsageError(f"{path} is not a valid .npz archive: {detail}", code="E0942")


def prepare_output(path: Path) -> Path:
    """Check that ``path`` can be written, creating its missing parent directories.

    Call it before long work so a bad ``-o`` fails at once.

    Returns:
        The path to write (a symbolic link resolved to its target).

    Raises:
        UsageError: E0940 ``path`` is a directory; E0941 a parent cannot be created.
    """
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if target.is_dir():
        raise UsageError(
            f"cannot write {path}: it is a directory",
            code="E0940",
            notes=("give the path of a file to write, e.g. DIR/NAME",),
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UsageError(
            f"cannot write {path}: a parent of it is a file, not a directory", code="E0941"
        ) from None
    except OSError as err:
        raise UsageError(
            f"cannot write {path}: cannot create its directory {target.parent}: "
            f"{err.strerror or err}",
            code="E0941",
        ) from None
    return target


@contextlib.contextmanager
def atomic_output(path: Path) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` atomically when the block ends without error.

    Note [Atomic outputs] in the module docstring.

    Raises:
        UsageError: E0940 ``path`` is a directory; E0941 it cannot be written.
    """
    target = prepare_output(path)
    if target.exists() and not target.is_file():  # a device or FIFO: nothing to rename over
        try:
            with target.open("wb") as fh:
                yield fh
        except OSError as err:
            raise _write_error(path, err) from None
        return
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as err:
        raise _write_error(path, err) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except OSError as err:
        raise _write_error(path, err) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _write_error(path: Path, err: OSError) -> UsageError:
    if isinstance(err, IsADirectoryError):
        return UsageError(f"cannot write {path}: it is a directory", code="E0940")
    return UsageError(f"cannot write {path}: {err.strerror or err}", code="E0941")


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically (Note [Atomic outputs]).

    Returns:
        ``path``.

    Raises:
        UsageError: E0940 ``path`` is a directory; E0941 it cannot be written.
    """
    with atomic_output(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def append_atomic(path: Path, text: str) -> Path:
    """Append ``text`` to ``path`` by rewriting it atomically (a missing file is created).

    Raises:
        UsageError: E0902 the existing file is unreadable; E0940, E0941 as `write_atomic`.
    """
    old = read_text(path) if path.is_file() else ""
    return write_atomic(path, old + text)
