"""The guarded child's outcome, as JSON: written by the child, read by the parent.

Contract: `encode_value`, `encode_error` and `encode_bug` turn what ``fn`` did in the
child (`solar.guard`) into bytes; `decode_outcome(bytes, codec)` gives the parent
``fn``'s value back, or raises the `SolarError` or `InternalError` the child sent.

Note [Result channel]: the program runs in the child, so whatever the child can write,
the program can write too (it can find the result pipe in ``/proc/self/fd``). The
parent therefore never unpickles what comes down the pipe: the child sends one JSON
document (no code in it). Its value is encoded by a `ResultCodec` (`JSON_VALUES` for
plain data; `solar analyze` sends the report as JSON); an error goes as code, message,
notes, span, exit code and the name of a class from a fixed table (`ERROR_CLASSES`).
The parent checks the type of every field; anything else is `UnreadableOutcomeError`
(the guard's E0533). A program that forges a well-formed outcome can only lie about
its own analysis, never run code in the parent.
"""

from __future__ import annotations

import json
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from solar import diagnostics
from solar.diagnostics import SolarError, Source, Span, exception_text

__all__ = [
    "ERROR_CLASSES",
    "JSON_VALUES",
    "MAX_RESULT_BYTES",
    "InternalError",
    "InterruptedRunError",
    "ResultCodec",
    "UnreadableOutcomeError",
    "decode_outcome",
    "encode_bug",
    "encode_error",
    "encode_value",
]

T = TypeVar("T")

MAX_RESULT_BYTES: Final = 1 << 30
"""The most the child may send back (1 GiB of JSON; a report is a few MiB at most)."""

_STOP_SIGNALS: Final = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


class InterruptedRunError(SolarError):
    """SOLAR was stopped by a signal (E0951); exits 128 + the signal number."""

    default_code = "E0951"

    def __init__(self, signum: int) -> None:
        name = signal.Signals(signum).name
        super().__init__(f"interrupted by {name}; the analysis was stopped", code="E0951")
        self.signum = signum
        self.exit_code = 128 + signum  # type: ignore[misc]


class InternalError(Exception):
    """A bug in SOLAR raised in the child process, carried to the parent (E0999).

    Attributes:
        kind: the original exception's type name.
        traceback_text: its formatted traceback (shown with ``SOLAR_DEBUG=1``).
    """

    def __init__(self, kind: str, message: str, traceback_text: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.traceback_text = traceback_text


class UnreadableOutcomeError(Exception):
    """The bytes are not an outcome `solar.guard`'s child writes (Note [Result channel])."""


@dataclass(frozen=True, slots=True)
class ResultCodec(Generic[T]):
    """How ``fn``'s value crosses from the child to the parent as text.

    ``decode(encode(v))`` equals ``v``; ``decode`` runs no code the text could choose,
    and raises ``ValueError`` (or ``RecursionError``) for text it refuses.
    """

    encode: Callable[[T], str]
    decode: Callable[[str], T]


JSON_VALUES: Final[ResultCodec[Any]] = ResultCodec(json.dumps, json.loads)
"""Plain JSON data (dicts, lists, strings, numbers, booleans, None)."""

ERROR_CLASSES: Final[dict[str, type[SolarError]]] = {
    cls.__name__: cls
    for cls in (*(getattr(diagnostics, n) for n in diagnostics.__all__), InterruptedRunError)
    if isinstance(cls, type) and issubclass(cls, SolarError)
}
"""The error classes the parent rebuilds, by name; any other `SolarError` comes back as
its nearest base among them."""


def encode_value(value: T, codec: ResultCodec[T]) -> bytes:
    """``fn``'s value as an outcome.

    Raises:
        TypeError, ValueError: the codec cannot encode it (a SOLAR bug).
    """
    return _dumps({"kind": "ok", "value": codec.encode(value)})


def encode_error(err: SolarError) -> bytes:
    """A `SolarError` as an outcome: its nearest class of `ERROR_CLASSES` and fields."""
    span = err.span
    return _dumps(
        {
            "kind": "error",
            "class": next(c.__name__ for c in type(err).__mro__ if c.__name__ in ERROR_CLASSES),
            "code": err.code,
            "message": err.message,
            "notes": list(err.notes),
            "exit_code": err.exit_code,
            "signum": getattr(err, "signum", None),
            "span": None
            if span is None
            else {
                "name": span.source.name,
                "text": span.source.text,
                "start": span.start,
                "end": span.end,
            },
        }
    )


def encode_bug(err: BaseException) -> bytes:
    """An unexpected exception (a SOLAR bug) as an outcome."""
    text = "".join(traceback.format_exception(err))
    return _dumps(
        {"kind": "bug", "type": type(err).__name__, "message": exception_text(err) or "?",
         "traceback": text}
    )


def _dumps(record: dict[str, object]) -> bytes:
    return json.dumps(record).encode("utf-8")


def decode_outcome(payload: bytes, codec: ResultCodec[T]) -> T:
    """``fn``'s value from an outcome, type-checked field by field.

    Raises:
        SolarError: the error the child sent (rebuilt from `ERROR_CLASSES`).
        InternalError: the child sent a bug.
        UnreadableOutcomeError: anything that is not an outcome the child writes.
    """
    try:
        record = json.loads(payload)
        if not isinstance(record, dict):
            raise UnreadableOutcomeError("not a JSON object")
        kind = record.get("kind")
        if kind == "ok":
            return codec.decode(_field(record, "value", str))
    except (ValueError, RecursionError) as err:  # JSONDecodeError and codecs' refusals
        raise UnreadableOutcomeError(f"{type(err).__name__}: {str(err)[:200]}") from None
    if kind == "error":
        raise _rebuild_error(record)
    if kind == "bug":
        raise InternalError(
            _field(record, "type", str),
            _field(record, "message", str),
            _field(record, "traceback", str),
        )
    raise UnreadableOutcomeError(f"unknown kind {kind!r:.40}")


def _field(record: dict[str, Any], key: str, kind: type[T]) -> T:
    value = record.get(key)
    if type(value) is not kind:
        raise UnreadableOutcomeError(f"`{key}` is not {kind.__name__}")
    return value


def _rebuild_error(record: dict[str, Any]) -> SolarError:
    """The `SolarError` an ``"error"`` record describes."""
    cls = ERROR_CLASSES.get(_field(record, "class", str))
    notes = record.get("notes")
    if cls is None or not isinstance(notes, list) or not all(type(n) is str for n in notes):
        raise UnreadableOutcomeError("malformed error record")
    code, message = _field(record, "code", str), _field(record, "message", str)
    exit_code = _field(record, "exit_code", int)
    if cls is InterruptedRunError:
        signum = _field(record, "signum", int)
        if signum not in _STOP_SIGNALS:
            raise UnreadableOutcomeError("malformed interrupt record")
        return InterruptedRunError(signum)
    if not 0 < exit_code < 256:
        raise UnreadableOutcomeError("malformed exit code")
    err = cls(message, code=code, span=_rebuild_span(record.get("span")), notes=tuple(notes))
    err.exit_code = exit_code  # type: ignore[misc]
    return err


def _rebuild_span(value: object) -> Span | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UnreadableOutcomeError("malformed span")
    name, text = _field(value, "name", str), _field(value, "text", str)
    start, end = _field(value, "start", int), _field(value, "end", int)
    return Span(Source(name, text), start, end)
