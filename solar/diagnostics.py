"""Diagnostics: source spans, the SOLAR error hierarchy and its rendering.

Contract: a leaf module (no SOLAR imports). Every error a user can provoke is a
`SolarError` with a stable code and, where it concerns source text, a `Span`.
`render_diagnostic` formats it rustc/ruff style::

    error[E0203]: index `k` is not bound by an enclosing loop
      --> samples/matmul.alir:7:22
       |
     7 |       C[i, j] += A[i, k] * B[k, j]
       |                      ^

Error code ranges (stable, documented in README.md):

* ``E01xx`` IR syntax
* ``E02xx`` IR verification (names, ranks, affinity, bounds, dtypes)
* ``E03xx`` execution and validation
* ``E04xx`` hardware specs and bound evaluation
* ``E05xx`` frontends (model loading, capture, lowering)
* ``E06xx`` LLM frontend
* ``E07xx`` reports and CI gate
* ``E08xx`` distributed plans (solar.distributed)
* ``E09xx`` usage and resources
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

__all__ = [
    "ExecutionError",
    "FrontendError",
    "HardwareSpecError",
    "IRSyntaxError",
    "IRVerifyError",
    "LLMError",
    "PlanError",
    "ReportError",
    "ResourceError",
    "SolarError",
    "Source",
    "Span",
    "UsageError",
    "ValidationMismatchError",
    "exception_text",
    "printable",
    "render_diagnostic",
]


@dataclass(frozen=True, slots=True)
class Source:
    """A named source text; spans point into it."""

    name: str
    text: str = field(repr=False)

    def line_col(self, offset: int) -> tuple[int, int]:
        """Return the 1-based (line, column) of a character offset.

        >>> Source("x", "ab\\ncd").line_col(4)
        (2, 2)
        """
        offset = max(0, min(offset, len(self.text)))
        line = self.text.count("\n", 0, offset) + 1
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return line, col

    def line_text(self, line: int) -> str:
        """Return the text of a 1-based line without its newline."""
        lines = self.text.split("\n")
        return lines[line - 1] if 0 < line <= len(lines) else ""


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open character range ``[start, end)`` in a `Source`."""

    source: Source
    start: int
    end: int

    @property
    def line(self) -> int:
        """The 1-based line of the span start."""
        return self.source.line_col(self.start)[0]

    @property
    def col(self) -> int:
        """The 1-based column of the span start."""
        return self.source.line_col(self.start)[1]

    def __str__(self) -> str:
        return f"{self.source.name}:{self.line}:{self.col}"


class SolarError(Exception):
    """Base of every error SOLAR reports to a user.

    Attributes:
        code: stable error code, e.g. ``E0203``.
        message: one-line human message.
        span: where in the source the error is, if it concerns source text.
        notes: extra lines rendered after the excerpt.
    """

    default_code: ClassVar[str] = "E0900"
    exit_code: ClassVar[int] = 1

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        span: Span | None = None,
        notes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.code = code or self.default_code
        self.message = message
        self.span = span
        self.notes = tuple(notes)

    def render(self) -> str:
        """Render this error as a multi-line diagnostic."""
        return render_diagnostic(self)


class IRSyntaxError(SolarError):
    """The IR text does not match the grammar."""

    default_code = "E0100"


class IRVerifyError(SolarError):
    """The IR parses but is not well formed."""

    default_code = "E0200"


class ExecutionError(SolarError):
    """Executing IR failed (out of bounds, uninitialised read, division by zero...)."""

    default_code = "E0300"


class ValidationMismatchError(SolarError):
    """IR outputs differ from the source program's outputs."""

    default_code = "E0310"


class HardwareSpecError(SolarError):
    """A hardware spec is missing, unknown or malformed."""

    default_code = "E0400"
    exit_code = 2


class FrontendError(SolarError):
    """A model file could not be loaded, captured or lowered."""

    default_code = "E0500"


class LLMError(SolarError):
    """The LLM frontend failed (endpoint, auth, rate limit, bad replies)."""

    default_code = "E0600"


class PlanError(SolarError):
    """A parallel plan that cannot run on the program or the cluster (solar.distributed)."""

    default_code = "E0800"
    exit_code = 2


class ReportError(SolarError):
    """A report file is missing or malformed."""

    default_code = "E0700"


class UsageError(SolarError):
    """The command line is wrong."""

    default_code = "E0900"
    exit_code = 2


class ResourceError(SolarError):
    """A resource budget (memory, time) would be exceeded."""

    default_code = "E0910"


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters (C0, C1) and the bidirectional controls (Unicode's Trojan Source
list): printed raw they forge log lines or reverse the text after them."""


def printable(text: str, *, lines: bool = False) -> str:
    r"""``text`` with control and bidi characters escaped, for one line of output
    (``lines``: a block of lines; newlines and tabs are kept).

    Names SOLAR prints come from files (a program named after its file, a report read
    back); a newline or a right-to-left override in one must not forge or reverse a line.

    >>> printable("mlp\x1b[2K\nPASS \u202eevil")
    'mlp\\x1b[2K\\x0aPASS \\u202eevil'
    """
    if lines:
        return "\n".join(printable(line).replace("\\x09", "\t") for line in text.split("\n"))
    return _UNPRINTABLE.sub(_escape, text)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


MAX_SHOWN_CHARS = 2000
"""The most characters of one message or note a diagnostic shows (Note [Bounded
diagnostics])."""

_SOURCE_WINDOW = 120
"""The characters of a source line shown around the caret."""


def _bounded(text: str, *, lines: bool = False) -> str:
    """Note [Bounded diagnostics]: a message, a note or a source line comes from the
    user's files or code (an exception's message, a 7 MB line of IR); the diagnostic shows
    at most `MAX_SHOWN_CHARS` of it, escaped by `printable`, and says how much it left out.

    >>> _bounded("x" * 2005)[-40:]
    'xxxxxxxxxxxxxxx... (5 more characters)'
    """
    shown = text[:MAX_SHOWN_CHARS]
    rest = len(text) - len(shown)
    return printable(shown, lines=lines) + (f"... ({rest:,} more characters)" if rest else "")


def exception_text(err: BaseException) -> str | None:
    """``str(err)``, or ``None`` when the exception's own ``__str__`` fails (the user's
    exception classes run arbitrary code there: they raise, recurse, or return a non-str).

    >>> class Odd(Exception):
    ...     def __str__(self): raise RuntimeError
    >>> exception_text(Odd()) is None, exception_text(ValueError("bad"))
    (True, 'bad')
    """
    try:
        text = str(err)
    except Exception:  # noqa: BLE001 (any exception of the user's __str__)
        return None
    return text if isinstance(text, str) else None


def render_diagnostic(err: SolarError, *, context_lines: int = 0) -> str:
    """Render an error as ``error[CODE]: message`` with location and caret.

    Args:
        err: the error to render.
        context_lines: how many source lines before the offending one to show.

    Returns:
        The multi-line diagnostic text (no trailing newline).
    """
    out = [f"error[{err.code}]: {_bounded(err.message)}"]
    span = err.span
    if span is not None:
        line, col = span.source.line_col(span.start)
        end_line, end_col = span.source.line_col(max(span.start, span.end))
        width = len(str(line))
        pad = " " * width
        out.append(f"{pad}--> {span.source.name}:{line}:{col}")
        out.append(f"{pad} |")
        for ctx in range(max(1, line - context_lines), line):
            shown = span.source.line_text(ctx)[:_SOURCE_WINDOW]
            out.append(f"{str(ctx).rjust(width)} | {printable(shown)}")
        raw = span.source.line_text(line)
        long_line = len(raw) > _SOURCE_WINDOW  # shown as a window around the caret
        start = max(0, col - 1 - _SOURCE_WINDOW // 2) if long_line else 0
        end = start + _SOURCE_WINDOW if long_line else len(raw)
        n_carets = end_col - col if end_line == line and end_col > col else 1
        n_carets = max(1, min(n_carets, end - col + 1))
        before = printable(raw[start : col - 1])
        marked = printable(raw[col - 1 : col - 1 + n_carets])
        after = printable(raw[col - 1 + n_carets : end])
        lead, tail = ("..." if start else ""), ("..." if end < len(raw) else "")
        out.append(f"{line} | {lead}{before}{marked}{after}{tail}")
        out.append(f"{pad} | {' ' * (len(lead) + len(before))}{'^' * max(1, len(marked))}")
    for note in err.notes:
        out.append(f"  = note: {_bounded(note, lines=True)}")
    return "\n".join(out)
