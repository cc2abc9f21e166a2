"""Translate any source program to Affine Loop IR through an LLM, with a repair loop.

Contract: ``(source text, TranslationTask, LLMConfig, check) -> TranslationResult``
or a typed `LLMError`. Pipeline of one run:

1. cache lookup (unless ``use_cache=False``): a hit is re-accepted (parse, verify,
   interface, ``check``) and returned with no request;
2. prompt = system (rules + IR reference + grammar + examples) and user (task);
3. up to ``max_attempts`` times: request a reply, extract the IR, parse, verify,
   check the interface, run ``check``; a rejection appends the reply and its
   rendered diagnostic (the caret excerpt, or the validation mismatch) to the
   conversation and asks again;
4. the accepted IR and the transcript are written to the cache.

The reply is untrusted: it is only ever parsed as IR text (`extract_ir` then
`parse_program`), never executed or used as a path; it is size-capped.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

from solar.diagnostics import (
    ExecutionError,
    IRSyntaxError,
    IRVerifyError,
    SolarError,
    ValidationMismatchError,
)
from solar.frontends.llm.cache import (
    CacheEntry,
    cache_key,
    cache_path,
    key_material,
    load_entry,
    store_entry,
    warn_cache,
)
from solar.frontends.llm.config import DEFAULT_MAX_REPLY_BYTES, LLMConfig
from solar.frontends.llm.errors import (
    E_ATTEMPTS_EXHAUSTED,
    E_BAD_CONFIG,
    E_NO_IR,
    E_NO_MODEL,
    E_REPLY_TOO_LARGE,
    LLMConfigError,
    LLMEndpointError,
    LLMReplyError,
    LLMTranslationError,
)
from solar.frontends.llm.extract import extract_ir
from solar.frontends.llm.prompt import Message, build_messages, repair_message
from solar.frontends.llm.result import Attempt, Outcome, TranslationResult
from solar.frontends.llm.task import TranslationTask, check_interface
from solar.frontends.llm.transport import Completion, make_client, request_completion
from solar.ir import Program, parse_program, verify_program

__all__ = ["Check", "accept_ir", "record_cache_entry", "translate_program"]

_log = logging.getLogger(__name__)

Check = Callable[[Program], None]
"""Validation callback: raises a `SolarError` (typically `ValidationMismatchError`
saying which output differs, where and by how much) if the program is wrong."""

_Complete = Callable[[Sequence[Message]], Completion]


def accept_ir(
    ir_text: str, task: TranslationTask, check: Check | None, *, filename: str
) -> Program:
    """Parse, verify, interface-check and ``check`` IR text; return the program.

    Raises:
        IRSyntaxError, IRVerifyError: the text is not a valid program.
        LLMReplyError: its tensors differ from the task (E0608).
        SolarError: whatever ``check`` raises.
    """
    program = parse_program(ir_text, filename=filename)
    verify_program(program)
    check_interface(program, task)
    if check is not None:
        check(program)
    return program


def _classify(err: SolarError) -> Outcome:
    if isinstance(err, IRSyntaxError):
        return "syntax-error"
    if isinstance(err, IRVerifyError):
        return "verify-error"
    if isinstance(err, LLMReplyError):
        return "interface-mismatch"
    if isinstance(err, ExecutionError):
        return "execution-error"
    if isinstance(err, ValidationMismatchError):
        return "validation-mismatch"
    return "check-error"


def _evaluate(
    completion: Completion,
    task: TranslationTask,
    check: Check | None,
    *,
    number: int,
    max_reply_bytes: int,
) -> tuple[Outcome, str, str, Program | None]:
    """``(outcome, diagnostic, ir_text, program)`` of one reply."""
    if completion.too_large:
        err = LLMReplyError(
            f"the reply is larger than the {max_reply_bytes}-byte limit and was discarded",
            code=E_REPLY_TOO_LARGE,
            notes=("reply with only the IR program, in one ```alir block",),
        )
        return "too-large", err.render(), "", None
    ir_text = extract_ir(completion.text)
    if ir_text is None:
        err = LLMReplyError(
            "the reply contains no IR program",
            code=E_NO_IR,
            notes=("expected one ```alir fenced block whose first line is `solar-ir 1`",),
        )
        return "no-ir", err.render(), "", None
    try:
        program = accept_ir(ir_text, task, check, filename=f"attempt-{number}.alir")
    except SolarError as err:
        diagnostic = err.render()
        if completion.finish_reason == "length":
            diagnostic += (
                "\n  = note: the reply was cut off by the server's output token limit; "
                "write a more compact program"
            )
        return _classify(err), diagnostic, ir_text, None
    return "ok", "", ir_text, program


def _run_loop(
    source: str,
    task: TranslationTask,
    check: Check | None,
    *,
    complete: _Complete,
    max_attempts: int,
    max_reply_bytes: int,
) -> tuple[str, Program, tuple[Attempt, ...]]:
    messages = build_messages(source, task)
    attempts: list[Attempt] = []
    for number in range(1, max_attempts + 1):
        try:
            completion = complete(messages)
        except LLMEndpointError as err:
            attempts.append(Attempt(number, "http-error", err.render()))
            err.attempts = tuple(attempts)
            raise
        outcome, diagnostic, ir_text, program = _evaluate(
            completion, task, check, number=number, max_reply_bytes=max_reply_bytes
        )
        attempts.append(
            Attempt(
                number,
                outcome,
                diagnostic,
                completion.text,
                completion.prompt_tokens,
                completion.completion_tokens,
                completion.latency_s,
                completion.retry_delays_s,
            )
        )
        _log.info("LLM attempt %d: %s", number, outcome)
        if program is not None:
            return ir_text, program, tuple(attempts)
        messages.append({"role": "assistant", "content": completion.text or "(reply discarded)"})
        messages.append({"role": "user", "content": repair_message(number, outcome, diagnostic)})
    last = attempts[-1]
    raise LLMTranslationError(
        f"no acceptable IR after {max_attempts} attempt{'s' if max_attempts > 1 else ''}",
        code=E_ATTEMPTS_EXHAUSTED,
        notes=(
            "outcomes: " + ", ".join(a.outcome for a in attempts),
            "last diagnostic:\n" + textwrap.indent(last.diagnostic, "    "),
            "raise --max-attempts, try a stronger model, or write the IR by hand",
        ),
        attempts=tuple(attempts),
    )


def _from_cache(
    key: str, task: TranslationTask, check: Check | None, config: LLMConfig
) -> TranslationResult | None:
    entry = load_entry(config.cache_dir, key)
    if entry is None:
        return None
    path = cache_path(config.cache_dir, key)
    try:
        program = accept_ir(entry.ir_text, task, check, filename=str(path))
    except SolarError as err:
        warn_cache(
            f"cached translation {path} is rejected now ({err.code}: {err.message}); "
            "translating again"
        )
        return None
    _log.info("LLM cache hit %s", path)
    return TranslationResult(entry.ir_text, program, entry.attempts, True, key, path, config.model)


def translate_program(
    source: str,
    *,
    config: LLMConfig,
    task: TranslationTask,
    check: Check | None = None,
) -> TranslationResult:
    """Translate ``source`` into verified (and checked) Affine Loop IR.

    Args:
        source: the program text (kind ``"program"``) or the operator's
            reference implementation (kind ``"op"``).
        config: endpoint, model, limits and cache settings.
        task: what to translate and the tensors the IR must declare.
        check: validation callback; raises a `SolarError` if the program
            computes the wrong thing (its rendering goes back to the model).

    Returns:
        The accepted IR, its `Program` and the transcript of attempts.

    Raises:
        LLMConfigError: no model configured (E0607).
        LLMEndpointError: the endpoint failed (E0601-E0604, E0606); ``.attempts``
            holds the attempts made so far.
        LLMTranslationError: every attempt was rejected (E0605); ``.attempts``
            holds them all, the last diagnostic is in the notes.
    """
    if not config.model:
        raise LLMConfigError(
            "no LLM model configured",
            code=E_NO_MODEL,
            notes=("pass --model NAME or set SOLAR_LLM_MODEL",),
        )
    key = cache_key(source, task, model=config.model)
    if config.use_cache:
        hit = _from_cache(key, task, check, config)
        if hit is not None:
            return hit
    with make_client(config) as client:
        ir_text, program, attempts = _run_loop(
            source,
            task,
            check,
            complete=lambda messages: request_completion(client, config, messages),
            max_attempts=config.max_attempts,
            max_reply_bytes=config.max_reply_bytes,
        )
    entry = CacheEntry(key, key_material(source, task, model=config.model), ir_text, attempts)
    path: Path | None
    try:
        path = store_entry(config.cache_dir, entry)
    except OSError as err:
        warn_cache(f"cannot write the LLM cache entry: {err}")
        path = None
    return TranslationResult(ir_text, program, attempts, False, key, path, config.model)


def record_cache_entry(
    source: str,
    *,
    task: TranslationTask,
    model: str,
    replies: Sequence[str],
    cache_dir: Path,
    check: Check | None = None,
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
) -> TranslationResult:
    """Replay scripted ``replies`` through the real repair loop and cache the result.

    Used to record offline cache entries (``samples/llm/record.py``): each reply
    is evaluated exactly as a live one would be, so the stored diagnostics are
    the ones a model would really have been sent. Token counts are unknown
    (``None``) and latencies 0, which keeps the file byte-for-byte reproducible.

    Args:
        source: as for `translate_program`.
        task: as for `translate_program`.
        model: the model name the entry is keyed under (e.g. ``recorded``).
        replies: the scripted replies; the last one, and only it, must be accepted.
        cache_dir: where to write the entry.
        check: as for `translate_program`.
        max_reply_bytes: the size cap applied to each reply.

    Returns:
        The result, with ``cache_path`` set.

    Raises:
        LLMTranslationError: the last reply is rejected too (E0605).
        LLMConfigError: a reply before the last was already accepted (E0609).
    """
    if not replies:
        raise LLMConfigError("record_cache_entry needs at least one reply", code=E_BAD_CONFIG)
    scripted = list(replies)

    def replay(_messages: Sequence[Message]) -> Completion:
        text = scripted.pop(0)
        size = len(text.encode("utf-8"))
        if size > max_reply_bytes:
            return Completion("", None, None, 0.0, reply_bytes=size, too_large=True)
        return Completion(text, None, None, 0.0, reply_bytes=size)

    ir_text, program, attempts = _run_loop(
        source,
        task,
        check,
        complete=replay,
        max_attempts=len(replies),
        max_reply_bytes=max_reply_bytes,
    )
    if scripted:
        raise LLMConfigError(
            f"reply {len(attempts)} of {len(replies)} was already accepted",
            code=E_BAD_CONFIG,
            notes=("only the last scripted reply may be correct",),
        )
    key = cache_key(source, task, model=model)
    entry = CacheEntry(
        key, key_material(source, task, model=model), ir_text, attempts, "record_cache_entry"
    )
    path = store_entry(cache_dir, entry)
    return TranslationResult(ir_text, program, attempts, False, key, path, model)
