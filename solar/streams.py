"""The standard streams while user code runs: SOLAR's stdout is data only.

Contract: `user_stdout_to_stderr` sends what user code prints to stderr (Note [User
output]); `standard_streams` guards descriptors 1 and 2 and the ``sys`` streams for the
whole guarded run (Note [Standard streams]); `ignored_exceptions_as_warnings` turns the
tracebacks Python prints for exceptions nobody can catch into one warning line each
(Note [Ignored exceptions]).

Note [Standard streams]: stdout is the report's alone. While ``fn`` runs, descriptor 1
points at stderr (in the child for good; in this process until ``fn`` returns), so a
model's ``print(..., file=sys.__stdout__)`` or a native library writing to descriptor 1
cannot corrupt ``--format json``. The program sees ``sys.stdout``, ``sys.stderr`` and
their ``__dunder__`` twins as streams whose ``close`` only flushes, and descriptors 1
and 2 are put back afterwards, so a model that closes them leaves SOLAR able to print.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from typing import IO, Any, Final

__all__ = ["ignored_exceptions_as_warnings", "standard_streams", "user_stdout_to_stderr"]

logger = logging.getLogger("solar")


class _KeptOpen:
    """A standard stream as the program sees it: ``close`` only flushes (Note [Standard
    streams]); everything else is the stream's own."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def close(self) -> None:
        """Flush instead of closing: SOLAR still needs the stream."""
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __enter__(self) -> _KeptOpen:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_STREAMS: Final = ("stdout", "stderr", "__stdout__", "__stderr__")


@contextlib.contextmanager
def standard_streams(*, restore: bool = True) -> Iterator[None]:
    """Note [Standard streams]: descriptor 1 on stderr and unclosable ``sys`` streams
    while the block runs; both put back afterwards. The child (``restore=False``) keeps
    no copy of the real stdout's descriptor, so the program cannot write to it."""
    old = {name: getattr(sys, name) for name in _STREAMS}
    _flush(old.values())
    saved: tuple[int, int] | None = None
    if restore:
        with contextlib.suppress(OSError):  # a descriptor closed already: left as it is
            saved = (os.dup(1), os.dup(2))
    try:
        if saved is not None or not restore:
            with contextlib.suppress(OSError):
                os.dup2(2, 1)
        for name, stream in old.items():
            if stream is not None:
                setattr(sys, name, _KeptOpen(stream))
        yield
    finally:
        _flush(old.values())
        for name, stream in old.items():
            setattr(sys, name, stream)
        if saved is not None:
            for fd, copy in zip((1, 2), saved, strict=True):
                os.dup2(copy, fd)
                os.close(copy)


def _flush(streams: Iterable[IO[str] | None]) -> None:
    for stream in streams:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if stream is not None:
                stream.flush()


@contextlib.contextmanager
def user_stdout_to_stderr() -> Iterator[None]:
    """While user code runs, send what it prints to stderr.

    Note [User output]: SOLAR's stdout carries data only (``--format json``, tables), so
    a model's own ``print`` must not land in it. Every place that runs user code (the
    frontends' ``user_code`` guards, `solar.measure`, the CLI around library calls)
    uses this one helper. Only Python-level writes to ``sys.stdout`` are redirected;
    native code writing to file descriptor 1 directly is not.
    """
    with contextlib.redirect_stdout(sys.stderr):
        yield


@contextlib.contextmanager
def ignored_exceptions_as_warnings() -> Iterator[None]:
    """Note [Ignored exceptions]: an exception raised where nobody can catch it (a
    ``__del__`` method, a ``gc.callbacks`` entry, a weakref callback, a thread's target)
    is reported by Python itself, as "Exception ignored in ..." and a traceback on
    stderr. The program's own objects do this (a model whose ``__del__`` raises), during
    the guarded run or long after it, when the collector frees them. While the block runs
    (`solar.cli.main`, so the whole command, the guarded child included) each is one
    ``warning:`` line on the ``solar`` logger instead, naming the exception and where
    it was raised; the hooks Python had come back afterwards."""
    old = sys.unraisablehook, threading.excepthook
    sys.unraisablehook, threading.excepthook = _unraisable, _thread_exception
    try:
        yield
    finally:
        sys.unraisablehook, threading.excepthook = old


def _unraisable(report: Any) -> None:
    where = report.err_msg or "Exception ignored in"
    if report.object is not None:
        where = f"{where} {_name_of(report.object)}"
    _warn(report.exc_type, report.exc_value, where)


def _thread_exception(report: Any) -> None:
    if report.exc_type is SystemExit:
        return  # as Python's own hook: a thread's sys.exit ends the thread silently
    name = getattr(report.thread, "name", None) if report.thread is not None else None
    _warn(report.exc_type, report.exc_value, f"Exception ignored in thread {name or '?'}")


def _warn(exc_type: type[BaseException] | None, exc: BaseException | None, where: str) -> None:
    from solar.diagnostics import exception_text, printable

    text = exception_text(exc) if exc is not None else None
    name = getattr(exc_type, "__name__", "an exception")
    message = f"{name}: {text}" if text else name
    logger.warning("warning: %s: %s", printable(where.rstrip(": ")), printable(message[:500]))


def _name_of(obj: object) -> str:
    """A function's or method's qualified name, or an object's type: never its ``repr``
    (the program's code, which may fail)."""
    if isinstance(obj, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
        return obj.__qualname__
    return f"a {type(obj).__name__} object"
