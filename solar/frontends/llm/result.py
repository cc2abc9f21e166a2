"""Result values of a translation: one `Attempt` per reply, one `TranslationResult` per run.

Contract: frozen values plus their JSON form (`attempt_to_json` /
`attempt_from_json`), which the cache stores as the transcript of a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from solar.ir import Program

__all__ = [
    "OUTCOMES",
    "Attempt",
    "Outcome",
    "TranslationResult",
    "attempt_from_json",
    "attempt_to_json",
]

Outcome = Literal[
    "ok",
    "no-ir",
    "too-large",
    "syntax-error",
    "verify-error",
    "interface-mismatch",
    "execution-error",
    "validation-mismatch",
    "check-error",
    "http-error",
]
"""What happened to one attempt. ``http-error``: the request itself failed (the
run then stops with that `LLMEndpointError`); every other non-``ok`` outcome
sends its diagnostic back to the model."""

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One request/reply round.

    Attributes:
        number: 1-based attempt number.
        outcome: see `Outcome`.
        diagnostic: the rendered diagnostic sent back to the model ("" when ok).
        reply: the reply text as received ("" for http errors and oversize replies).
        prompt_tokens: from the server's ``usage`` (``None`` if not reported or recorded).
        completion_tokens: likewise.
        latency_s: request wall time (0 for replayed or recorded attempts).
        retry_delays_s: delays slept on HTTP 429 before this reply.
    """

    number: int
    outcome: Outcome
    diagnostic: str = ""
    reply: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    retry_delays_s: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class TranslationResult:
    """A successful translation.

    Attributes:
        ir_text: the accepted IR text.
        program: it, parsed and verified (and checked, when a check was given).
        attempts: every attempt, in order; the last one is ``ok``. For a cache
            hit, the transcript recorded when the entry was made.
        from_cache: the result came from the cache, with no request.
        cache_key: the entry's key (see `solar.frontends.llm.cache.cache_key`).
        cache_path: where the entry is (``None`` if it could not be written).
        model: the model name.
    """

    ir_text: str
    program: Program
    attempts: tuple[Attempt, ...]
    from_cache: bool
    cache_key: str
    cache_path: Path | None
    model: str

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens over all attempts (unreported counts as 0)."""
        return sum(a.prompt_tokens or 0 for a in self.attempts)

    @property
    def completion_tokens(self) -> int:
        """Completion tokens over all attempts (unreported counts as 0)."""
        return sum(a.completion_tokens or 0 for a in self.attempts)


def attempt_to_json(attempt: Attempt) -> dict[str, object]:
    """The JSON form of an attempt (latency rounded to ms for stable files)."""
    return {
        "number": attempt.number,
        "outcome": attempt.outcome,
        "diagnostic": attempt.diagnostic,
        "reply": attempt.reply,
        "prompt_tokens": attempt.prompt_tokens,
        "completion_tokens": attempt.completion_tokens,
        "latency_s": round(attempt.latency_s, 3),
        "retry_delays_s": [round(d, 3) for d in attempt.retry_delays_s],
    }


def _opt_int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TypeError(f"expected an integer or null, got {value!r}")


def attempt_from_json(data: Mapping[str, object]) -> Attempt:
    """Inverse of `attempt_to_json`.

    Raises:
        TypeError, ValueError, KeyError: malformed data.
    """
    outcome = data["outcome"]
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown outcome {outcome!r}")
    number, diagnostic, reply = data["number"], data["diagnostic"], data["reply"]
    latency, delays = data["latency_s"], data["retry_delays_s"]
    if not (isinstance(number, int) and isinstance(diagnostic, str) and isinstance(reply, str)):
        raise TypeError("attempt number/diagnostic/reply have the wrong types")
    if not isinstance(latency, int | float) or not isinstance(delays, list):
        raise TypeError("attempt latency/delays have the wrong types")
    return Attempt(
        number=number,
        outcome=outcome,
        diagnostic=diagnostic,
        reply=reply,
        prompt_tokens=_opt_int(data["prompt_tokens"]),
        completion_tokens=_opt_int(data["completion_tokens"]),
        latency_s=float(latency),
        retry_delays_s=tuple(float(d) for d in delays),
    )
