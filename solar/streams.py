"""The standard streams while user code runs: SOLAR's stdout is data only.

Contract: `user_stdout_to_stderr` sends what user code prints to stderr (Note [User
output]); `standard_streams` guards descriptors 1 and 2 and the ``sys`` streams for the
whole guarded run (Note [Standard streams]).

Note [Standard streams]: stdout is the report's alone. While ``fn`` runs, descriptor 1
points at stderr (in the child for good; in this process until ``fn`` returns), so a
model's ``print(..., file=sys.__stdout__)`` or a native library writing to descriptor 1
cannot corrupt ``--format json``. The program sees ``sys.stdout``, ``sys.stderr`` and
their ``__dunder__`` twins as streams whose ``close`` only flushes, and descriptors 1
and 2 are put back afterwards, so a model that closes them leaves SOLAR able to print.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, Final

__all__ = ["standard_streams", "user_stdout_to_stderr"]


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
