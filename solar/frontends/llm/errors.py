"""Errors of the LLM frontend (codes E0601-E0611) and their exit codes.

Contract: a leaf of `solar.frontends.llm`. Every failure the LLM path can report
is one of the three `LLMError` subclasses below, each with a stable code:

========  =====================================================  ====
code      meaning                                                exit
========  =====================================================  ====
E0601     endpoint unreachable (connection refused, DNS, reset)  2
E0602     authentication failed (HTTP 401/403)                   2
E0603     still rate limited (HTTP 429) after bounded retries    2
E0604     request timed out                                      2
E0605     every attempt was rejected; last diagnostic in notes   1
E0606     other HTTP error status, or a malformed response       2
E0607     no model configured                                    2
E0608     the program's tensors differ from the task's interface 1
E0609     invalid configuration or translation task              2
E0610     a reply larger than the size cap                       1
E0611     a reply that holds no IR program                       1
E0612     (warning) a cache entry was ignored or not written     —
========  =====================================================  ====

E0608, E0610 and E0611 describe one rejected attempt: their rendering is sent
back to the model as the next repair turn and recorded in the transcript; the
run then fails, if at all, with E0605. E0612 is never raised: it is the code of
the ``warning[E0612]`` log line for a cache entry that cannot be read, is corrupt
or no longer accepted (the program is translated again), or cannot be written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from solar.diagnostics import LLMError

if TYPE_CHECKING:
    from solar.frontends.llm.result import Attempt

__all__ = [
    "E_ATTEMPTS_EXHAUSTED",
    "E_AUTH",
    "E_BAD_CONFIG",
    "E_CACHE",
    "E_HTTP",
    "E_INTERFACE",
    "E_NO_IR",
    "E_NO_MODEL",
    "E_RATE_LIMIT",
    "E_REPLY_TOO_LARGE",
    "E_TIMEOUT",
    "E_UNREACHABLE",
    "LLMConfigError",
    "LLMEndpointError",
    "LLMReplyError",
    "LLMTranslationError",
]

E_UNREACHABLE = "E0601"
E_AUTH = "E0602"
E_RATE_LIMIT = "E0603"
E_TIMEOUT = "E0604"
E_ATTEMPTS_EXHAUSTED = "E0605"
E_HTTP = "E0606"
E_NO_MODEL = "E0607"
E_INTERFACE = "E0608"
E_BAD_CONFIG = "E0609"
E_REPLY_TOO_LARGE = "E0610"
E_NO_IR = "E0611"
E_CACHE = "E0612"


class _LLMRunError(LLMError):
    """An LLM failure that may carry the attempts made before it happened."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        notes: tuple[str, ...] = (),
        attempts: tuple[Attempt, ...] = (),
    ) -> None:
        super().__init__(message, code=code, notes=notes)
        self.attempts: tuple[Attempt, ...] = attempts


class LLMEndpointError(_LLMRunError):
    """The endpoint could not serve the request (E0601-E0604, E0606): exit code 2."""

    default_code: ClassVar[str] = E_HTTP
    exit_code: ClassVar[int] = 2


class LLMConfigError(_LLMRunError):
    """No model, or an invalid configuration or task (E0607, E0609): exit code 2."""

    default_code: ClassVar[str] = E_BAD_CONFIG
    exit_code: ClassVar[int] = 2


class LLMTranslationError(_LLMRunError):
    """Every attempt was rejected (E0605): exit code 1, the input could not be translated."""

    default_code: ClassVar[str] = E_ATTEMPTS_EXHAUSTED
    exit_code: ClassVar[int] = 1


class LLMReplyError(LLMError):
    """One reply was rejected before validation (E0608, E0610, E0611).

    Rendered into the repair turn and the transcript; never escapes
    `translate_program` (the run ends with `LLMTranslationError` instead).
    """

    default_code: ClassVar[str] = E_NO_IR
