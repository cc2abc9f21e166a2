"""File boundaries: reading the user's files and writing SOLAR's outputs atomically.

Contract: ``Path -> str | arrays`` for reading, ``(Path, data) -> Path`` for writing.
Every failure is a coded `UsageError` (exit 2), never a raw ``OSError``:

=====  ==================================================================================
E0901  no such file
E0902  the file cannot be read as text (a directory, no permission, not UTF-8 text)
E0940  an output path names an existing directory
E0941  an output cannot be written (no permission, disk full, a parent is not a directory)
E0942  an ``.npz`` archive is invalid (corrupt, empty, a bare ``.npy`` array, pickled
       objects, a member that is not an array) or declares more than `MAX_NPZ_BYTES` of
       arrays (an "npz bomb")
E0943  an input file is larger than its limit (`MAX_IR_BYTES` for IR, `MAX_TEXT_BYTES`
       for other text)
=====  ==================================================================================

Note [Guarded reads]: an input path is opened with ``O_NONBLOCK`` (opening a FIFO must
not wait for a writer) and checked with ``fstat`` on the open descriptor, so the check
and the read see the same file: anything but a regular file (``/dev/zero``, a FIFO, a
socket, a directory) is E0902 before a byte is read, and a file over its size limit is
E0943. At most limit + 1 bytes are ever read. An ``.npz`` archive is checked member by
member from the ``.npy`` headers (shape and dtype, read from the zip without
decompressing the data) before any array is allocated: the declared sizes must agree
with the zip's own sizes and add up to at most `MAX_NPZ_BYTES`.

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
import io
import math
import os
import stat
import tokenize
import uuid
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO, Literal

from solar.diagnostics import UsageError

if TYPE_CHECKING:  # numpy is imported where an archive is read (`solar --help` stays light)
    import numpy as np

__all__ = [
    "MAX_DATA_VALUES",
    "MAX_IR_BYTES",
    "MAX_NPZ_BYTES",
    "MAX_TEXT_BYTES",
    "DataError",
    "append_atomic",
    "atomic_output",
    "check_data",
    "check_input",
    "load_npz",
    "open_input",
    "parse_data",
    "prepare_output",
    "prepare_output_dir",
    "read_bytes",
    "read_text",
    "write_atomic",
]

MAX_TEXT_BYTES = 32 << 20
"""The largest text input (IR, model file, report, hardware spec): 32 MiB. The largest
IR SOLAR writes for a model-zoo network is well under 1 MiB; docs/reliability.md has the
time `solar ir check` takes per MiB."""

MAX_IR_BYTES = 8 << 20
"""The largest IR file (8 MiB, about 350,000 lines): parsing is linear but costs about
3 KB of memory and 0.1 ms per line (Lark's LALR parse dominates), so this bounds
``solar ir check`` to well under a minute and 1 GiB (docs/reliability.md)."""

MAX_NPZ_BYTES = 8 << 30
"""The most array data an ``.npz`` archive may declare (8 GiB, decompressed)."""

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


class DataError(ValueError):
    """JSON or YAML text that `parse_data` refuses; the message says why, in one line."""


def parse_data(text: str | bytes, *, fmt: Literal["json", "yaml"]) -> object:
    """JSON or YAML text as plain data: the one parser of structured text a user (or a
    process SOLAR does not trust) wrote (Note [Structured text]).

    Note [Structured text]: a parser of nested data recurses, so 20,000 nested brackets
    end in ``RecursionError``; Python refuses integers of more than 4300 digits with
    ``ValueError``; JSON admits ``NaN`` and ``Infinity``; a YAML alias shares its anchor's
    value, so nine lines of aliases stand for 10^9 strings (a "billion laughs") and one
    alias to its own anchor makes a list that holds itself, and a walk over either never
    ends. Each is refused here as a
    `DataError` (`check_data`), and the caller turns it into its own coded diagnostic; the data that
    comes back holds only dicts, lists, strings, finite floats, ints and booleans (and
    None), whose types the caller still checks field by field.

    Raises:
        DataError: not valid text of ``fmt``, nested too deeply, a number out of range.

    >>> parse_data('{"a": [1, 2.5]}', fmt="json")
    {'a': [1, 2.5]}
    >>> parse_data("[" * 100_000 + "]" * 100_000, fmt="json")
    Traceback (most recent call last):
    ...
    solar.files.DataError: nested too deeply
    """
    import json

    import yaml

    try:
        if fmt == "json":
            return check_data(json.loads(text, parse_constant=_no_constant))
        return check_data(yaml.safe_load(text))
    except RecursionError:
        raise DataError("nested too deeply") from None
    except json.JSONDecodeError as err:
        raise DataError(f"not JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    except yaml.YAMLError as err:
        raise DataError(f"not YAML: {' '.join(str(err).split())[:200]}") from None
    except ValueError as err:  # an integer over Python's digit limit, a NaN
        raise DataError(str(err).split(";")[0].strip()[:200]) from None


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number")


MAX_DATA_VALUES = 1_000_000
"""The most values a document of structured text may hold once YAML aliases are expanded
(a sweep file or a plan holds hundreds; Note [Structured text])."""


def check_data(data: object) -> object:
    """``data`` (as a YAML or JSON parser built it) once checked; see Note [Structured
    text]. Each container is visited once, so the check is linear in the text.

    Raises:
        DataError: a float that is not finite, a container that holds itself, or more
            than `MAX_DATA_VALUES` values once aliases are expanded.

    >>> check_data({"a": [1, 2.5]})
    {'a': [1, 2.5]}
    >>> bomb = ["x"] * 10
    >>> for _ in range(6):
    ...     bomb = [bomb] * 10
    >>> check_data(bomb)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    solar.files.DataError: holds 1,111,111 values once YAML aliases are expanded, ...
    """
    expanded: dict[int, int] = {}  # id of a container -> its values, aliases expanded
    open_ids: set[int] = set()
    todo: list[tuple[object, bool]] = [(data, False)]
    while todo:
        item, done = todo.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise DataError(f"{item} is not a finite number")
        if not isinstance(item, dict | list) or (id(item) in expanded and not done):
            continue
        children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
        if not done:
            if id(item) in open_ids:
                raise DataError("a value holds itself (a YAML alias to its own anchor)")
            open_ids.add(id(item))
            todo.append((item, True))
            todo.extend((c, False) for c in children)
            continue
        open_ids.discard(id(item))
        expanded[id(item)] = count = 1 + sum(expanded.get(id(c), 1) for c in children)
        if count > MAX_DATA_VALUES:
            raise DataError(f"holds {count:,} values once YAML aliases are expanded, over "
                            f"the limit of {MAX_DATA_VALUES:,}")
    return data


def check_input(path: Path, *, max_bytes: int = MAX_TEXT_BYTES) -> None:
    """Check that ``path`` is a regular file of at most ``max_bytes``, reading nothing.

    Raises:
        UsageError: E0901 missing; E0902 a directory or not a regular file; E0943 too large.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", code="E0901") from None
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}", code="E0902") from None
    _check_stat(path, info, max_bytes)


def _check_stat(path: Path, info: os.stat_result, max_bytes: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"cannot read {path}: it is a directory", code="E0902")
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
        raise UsageError(
            f"cannot read {path}: it is {kind}, not a regular file", code="E0902"
        )
    if info.st_size > max_bytes:
        raise UsageError(
            f"cannot read {path}: {info.st_size:,} bytes, over the limit of {max_bytes:,}",
            code="E0943",
        )


@contextlib.contextmanager
def open_input(path: Path, *, max_bytes: int = MAX_TEXT_BYTES) -> Iterator[BinaryIO]:
    """``path`` opened for reading once it is known to be a regular file within its limit.

    Note [Guarded reads] in the module docstring.

    Raises:
        UsageError: E0901 missing; E0902 not a regular file or unreadable; E0943 too large.
    """
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", code="E0901") from None
    except IsADirectoryError:
        raise UsageError(f"cannot read {path}: it is a directory", code="E0902") from None
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}", code="E0902") from None
    try:
        _check_stat(path, os.fstat(fd), max_bytes)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        yield fh


def read_bytes(path: Path, *, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of ``path`` (Note [Guarded reads]).

    Raises:
        UsageError: E0901 missing file; E0902 unreadable or not a regular file; E0943
            over ``max_bytes``.
    """
    try:
        with open_input(path, max_bytes=max_bytes) as fh:
            data = fh.read(max_bytes + 1)
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror or err}", code="E0902") from None
    if len(data) > max_bytes:  # it grew after the check
        raise UsageError(f"cannot read {path}: over the limit of {max_bytes:,}", code="E0943")
    return data


def read_text(path: Path, *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of ``path`` (Note [Guarded reads]).

    Raises:
        UsageError: E0901 missing file; E0902 unreadable, not a regular file or not UTF-8
            text; E0943 over ``max_bytes``.
    """
    data = read_bytes(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UsageError(
            f"cannot read {path}: not UTF-8 text (invalid byte at offset {err.start})",
            code="E0902",
        ) from None


def load_npz(path: Path, *, max_bytes: int = MAX_NPZ_BYTES) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, by name (pickled objects are refused).

    The ``.npy`` headers are checked before any array is read (Note [Guarded reads]).

    Raises:
        UsageError: E0901 missing file; E0902 unreadable or not a regular file; E0942 not
            a valid archive, or declaring more than ``max_bytes`` of arrays.
    """
    import numpy as np

    with open_input(path, max_bytes=2**63 - 1) as fh:
        try:
            _check_npz_headers(path, fh, max_bytes)
            fh.seek(0)
            loaded = np.load(fh, allow_pickle=False)
        except OSError as err:
            raise UsageError(
                f"cannot read {path}: {err.strerror or err}", code="E0902"
            ) from None
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


def _check_npz_headers(path: Path, fh: BinaryIO, max_bytes: int) -> None:
    """Refuse an archive whose members declare more than ``max_bytes`` of data.

    Only the zip directory and each member's ``.npy`` header (at most a few KiB,
    decompressed on demand) are read. A bare ``.npy`` is refused from its magic bytes;
    any other file that is not a zip is left to `np.load` (which rejects it).
    """
    if not zipfile.is_zipfile(fh):
        fh.seek(0)
        if fh.read(6) == b"\x93NUMPY":  # refused here: np.load would read the array first
            raise UsageError(
                f"{path} is a single .npy array, not an .npz archive of named arrays",
                code="E0942",
                notes=("write one with numpy.savez(path, name=array, ...)",),
            )
        return
    fh.seek(0)
    total = 0
    with zipfile.ZipFile(fh) as archive:
        for info in archive.infolist():
            total += info.file_size  # the zip's own declared (decompressed) size
            if info.filename.endswith(".npy"):
                with archive.open(info) as member:
                    shape, dtype = _npy_header(member)
                if dtype.hasobject:
                    raise UsageError(
                        f"{path}: member `{info.filename}` holds pickled Python objects",
                        code="E0942",
                    )
                declared = math.prod(shape) * dtype.itemsize
                if declared > info.file_size:
                    raise UsageError(
                        f"{path}: member `{info.filename}` declares {declared:,} bytes "
                        f"of data but holds {info.file_size:,}",
                        code="E0942",
                    )
            if total > max_bytes:
                raise UsageError(
                    f"{path} declares {total / 2**30:.1f} GiB of arrays once decompressed, "
                    f"over the limit of {max_bytes / 2**30:.1f} GiB",
                    code="E0942",
                    notes=("an archive this large is refused before anything is allocated",),
                )


def _npy_header(member: IO[bytes]) -> tuple[tuple[int, ...], np.dtype[np.generic]]:
    import numpy as np

    fmt = np.lib.format
    version = fmt.read_magic(member)
    if version == (1, 0):
        shape, _, dtype = fmt.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, _, dtype = fmt.read_array_header_2_0(member)
    else:  # 3.0 (utf-8 field names) has no public reader
        shape, _, dtype = fmt._read_array_header(member, version)  # type: ignore[attr-defined]
    return tuple(int(d) for d in shape), dtype


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
    try:  # a name too long for the file system is an OSError here, not False
        target = Path(os.path.realpath(path)) if path.is_symlink() else path
        is_dir = target.is_dir()
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or err}", code="E0941") from None
    if is_dir:
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


def prepare_output_dir(
    out_dir: Path, *, files: tuple[str, ...] = (), folders: tuple[str, ...] = ()
) -> None:
    """Check, before any work, that a command's output folder can take its outputs:
    each of ``folders`` is (or is made) a writable folder, each of ``files`` is a path
    a file can be written at (`prepare_output`). `solar batch` and `solar sweep` call it
    first, so an unwritable ``--out`` is not found after the captures.

    Raises:
        UsageError: E0940 a folder where a file goes; E0941 a file where a folder goes,
            or a folder that cannot be written.
    """
    for name in folders:
        probe = out_dir / name / f".probe-{uuid.uuid4().hex[:12]}"
        write_atomic(probe, b"")  # creates the folder, and fails if it is not writable
        probe.unlink()
    for name in files:
        prepare_output(out_dir / name)


@contextlib.contextmanager
def atomic_output(path: Path) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` atomically when the block ends without error.

    Note [Atomic outputs] in the module docstring.

    Raises:
        UsageError: E0940 ``path`` is a directory; E0941 it cannot be written.
    """
    target = prepare_output(path)
    if target.exists() and not target.is_file():  # a device or FIFO: nothing to rename over
        try:  # O_NONBLOCK: a FIFO nobody reads is refused (ENXIO), not waited on
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            os.set_blocking(fd, True)
            with os.fdopen(fd, "wb") as fh:
                buffer = io.BytesIO()  # seekable, as a zip writer needs (`/dev/null` is not)
                yield buffer
                fh.write(buffer.getbuffer())
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
