"""One chat completion over HTTP, with bounded 429 retries and typed failures.

Contract: ``(client, config, messages) -> Completion`` or an `LLMEndpointError`.
The `openai` client is built with ``max_retries=0`` so that retrying is ours:
only HTTP 429 is retried, with the deterministic delays of
`LLMConfig.backoff_delay_s` (``Retry-After`` honoured up to a cap), and every
delay is recorded in the result. The response body is streamed and read only
up to `LLMConfig.max_body_bytes`; a larger body, or message text over
``max_reply_bytes``, comes back as ``Completion(too_large=True)`` instead of
being held in memory. The body must arrive within ``timeout_s`` of the
request's start, however slowly it drips (Note [Total deadline]). The reply is
returned as text and nothing else is done with it here.

Every openai/HTTP exception is mapped to a code (see `errors`); no bare
``except Exception``. `openai` (the ``llm`` extra) is imported on first use, so
the rest of SOLAR (and ``solar cache clear``) works without it.

Note [Total deadline]
~~~~~~~~~~~~~~~~~~~~~
The HTTP client's timeout bounds each socket read, not the request: a server
that sends one byte every few seconds never trips it. Until the headers arrive
that per-read limit is all there is (the client hides the socket until then).
From the headers on, `_read_body` enforces the overall deadline
(request start + ``timeout_s``) twice: it checks the clock after every network
read (each read is handed over as it arrives, never gathered into 64 KiB
chunks first), and a timer shuts the connection's socket down at the deadline,
so that a read blocked on a silent server returns at once instead of after
another per-read timeout. Either way the request fails with E0604.
"""

from __future__ import annotations

import contextlib
import dataclasses
import email.utils
import importlib
import logging
import math
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from solar.frontends.llm.config import LLMConfig
from solar.frontends.llm.errors import (
    E_AUTH,
    E_BAD_CONFIG,
    E_HTTP,
    E_RATE_LIMIT,
    E_TIMEOUT,
    E_UNREACHABLE,
    LLMConfigError,
    LLMEndpointError,
)
from solar.frontends.llm.prompt import Message

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletionMessageParam

__all__ = ["Completion", "make_client", "request_completion"]

_log = logging.getLogger(__name__)
_MAX_ERROR_TEXT = 300


class _DeadlineError(Exception):
    """The overall request deadline passed while the body was still arriving."""


def _modules() -> tuple[Any, Any]:
    """``(openai, httpx)``: the client library and the HTTP library it is built on.

    Raises:
        LLMConfigError: openai is not installed (E0609).
    """
    try:
        import openai
    except ImportError:
        raise LLMConfigError(
            "the LLM frontend needs the `openai` package",
            code=E_BAD_CONFIG,
            notes=("install it with: pip install 'solar-sol[llm]'",),
        ) from None
    try:  # openai >= 3 is built on httpx2, earlier releases on httpx (same API)
        http = importlib.import_module("httpx2")
    except ImportError:  # pragma: no cover - depends on the installed openai
        http = importlib.import_module("httpx")
    return openai, http


@dataclass(frozen=True, slots=True)
class Completion:
    """One reply of the endpoint.

    Attributes:
        text: the message content ("" when ``too_large``).
        prompt_tokens: from the reply's ``usage``, if the server reports it.
        completion_tokens: likewise.
        latency_s: wall time of the successful request (retries excluded).
        retry_delays_s: the delays slept before 429-retries of this request.
        finish_reason: the server's ``finish_reason`` (``length`` = cut off).
        reply_bytes: size of the text, or of the body read so far when too large.
        too_large: the reply exceeded the configured cap and was discarded.
    """

    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    retry_delays_s: tuple[float, ...] = ()
    finish_reason: str | None = None
    reply_bytes: int = 0
    too_large: bool = False


def make_client(config: LLMConfig) -> openai.OpenAI:
    """An `openai.OpenAI` client for ``config`` that never retries on its own.

    Raises:
        LLMConfigError: the base URL is malformed (E0609).
    """
    oa, http = _modules()
    try:
        client: openai.OpenAI = oa.OpenAI(
            base_url=config.base_url,
            api_key=config.client_api_key,
            timeout=config.timeout_s,
            max_retries=0,
        )
    except http.InvalidURL as err:
        raise LLMConfigError(
            f"invalid LLM endpoint URL `{config.base_url}`: {err}", code=E_BAD_CONFIG
        ) from None
    return client


def _short(text: object) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= _MAX_ERROR_TEXT else s[: _MAX_ERROR_TEXT - 3] + "..."


def _server_delay_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks us to wait (``retry-after-ms`` or ``Retry-After``).

    ``None`` when the server says nothing usable: no header, an unparseable value, or
    NaN. Infinite, negative and huge values come back as they are; the caller clamps
    them to ``[0, retry_after_max_s]``.

    >>> _server_delay_s({"retry-after": "nan"}) is None
    True
    >>> _server_delay_s({"retry-after": "-5"}), _server_delay_s({"retry-after-ms": "1e400"})
    (-5.0, inf)
    """
    ms = headers.get("retry-after-ms")
    if ms is not None:
        seconds = _parse_seconds(ms)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _parse_seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _parse_seconds(text: str) -> float | None:
    """``float(text)`` (``inf`` and negatives included), ``None`` if not a number or NaN."""
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _socket_of(response: Any) -> socket.socket | None:
    """The connection's socket (httpcore's ``network_stream`` extension), if exposed."""
    stream = getattr(response, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    return sock if isinstance(sock, socket.socket) else None


class _Watchdog:
    """Shuts a socket down at a deadline, waking a read blocked on it (Note [Total deadline])."""

    def __init__(self, sock: socket.socket | None, deadline: float) -> None:
        self.fired = False
        self._sock = sock
        self._timer: threading.Timer | None = None
        remaining = deadline - time.monotonic()
        if sock is not None and 0 < remaining < threading.TIMEOUT_MAX:
            self._timer = threading.Timer(remaining, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        if self._sock is not None:
            with contextlib.suppress(OSError):  # already closed: the read has ended anyway
                self._sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _read_body(response: Any, cap: int, deadline: float) -> tuple[bytes, bool]:
    """Read at most ``cap`` bytes; ``(body, too_large)``.

    Raises:
        _DeadlineError: the body was still arriving at ``deadline`` (Note [Total deadline]).
    """
    _oa, http = _modules()
    length = response.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > cap:
        return b"", True
    if time.monotonic() > deadline:
        raise _DeadlineError
    raw = getattr(response, "http_response", response)
    watchdog = _Watchdog(_socket_of(raw), deadline)
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in raw.iter_bytes():  # each network read, as it arrives
            size += len(chunk)
            if size > cap:
                return b"", True
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise _DeadlineError
    except http.TransportError:
        if watchdog.fired or time.monotonic() > deadline:
            raise _DeadlineError from None
        raise
    finally:
        watchdog.cancel()
    if watchdog.fired:  # the shutdown ended the body early: it is incomplete
        raise _DeadlineError
    return b"".join(chunks), False


_Envelope = tuple[str, int | None, int | None, str | None]


def _parse_envelope(body: bytes, config: LLMConfig) -> _Envelope:
    """``(content, prompt_tokens, completion_tokens, finish_reason)`` of a chat completion."""
    from solar.files import parse_data

    try:  # the one parser of untrusted structured text (depth, digits, NaN)
        data: Any = parse_data(body, fmt="json")
        choice = data["choices"][0]
        content = choice["message"].get("content") or ""
        if not isinstance(content, str):
            raise TypeError("message content is not a string")
        usage = data.get("usage") or {}
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        finish = choice.get("finish_reason")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as err:
        raise LLMEndpointError(
            f"{config.base_url} returned a reply that is not an OpenAI chat completion",
            code=E_HTTP,
            notes=(f"{type(err).__name__}: {_short(err)}", f"body starts: {_short(body[:200])}"),
        ) from None
    return (
        content,
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
        finish if isinstance(finish, str) else None,
    )


def _once(client: openai.OpenAI, config: LLMConfig, messages: Sequence[Message]) -> Completion:
    start = time.monotonic()
    with client.chat.completions.with_streaming_response.create(
        model=config.model,
        # a Message is one of openai's system/user/assistant message dicts
        messages=cast("list[ChatCompletionMessageParam]", list(messages)),
        temperature=config.temperature,
    ) as response:
        body, too_large = _read_body(response, config.max_body_bytes, start + config.timeout_s)
    latency = time.monotonic() - start
    if too_large:
        return Completion("", None, None, latency, reply_bytes=len(body), too_large=True)
    text, prompt, completion, finish = _parse_envelope(body, config)
    size = len(text.encode("utf-8"))
    if size > config.max_reply_bytes:
        return Completion(
            "", prompt, completion, latency, finish_reason=finish, reply_bytes=size, too_large=True
        )
    return Completion(text, prompt, completion, latency, finish_reason=finish, reply_bytes=size)


def request_completion(
    client: openai.OpenAI, config: LLMConfig, messages: Sequence[Message]
) -> Completion:
    """Send ``messages`` and return the reply, retrying HTTP 429 a bounded number of times.

    Args:
        client: from `make_client`.
        config: model, timeout, caps and retry policy.
        messages: the conversation so far.

    Returns:
        The completion (possibly ``too_large``), with the retry delays it took.

    Raises:
        LLMEndpointError: E0601 unreachable, E0602 authentication, E0603 still
            rate limited, E0604 timeout, E0606 other HTTP status or a malformed reply.
    """
    oa, http = _modules()
    delays: list[float] = []
    url = config.base_url
    for retry in range(config.max_retries + 1):
        try:
            result = _once(client, config, messages)
        except oa.RateLimitError as err:
            if retry == config.max_retries:
                raise LLMEndpointError(
                    f"{url} is still rate limiting (HTTP 429) after {retry} retries",
                    code=E_RATE_LIMIT,
                    notes=(
                        f"server said: {_short(err.message)}",
                        "wait and retry, or raise the limit on the server side",
                    ),
                ) from None
            delay = config.backoff_delay_s(retry, _server_delay_s(err.response.headers))
            _log.info("HTTP 429 from %s; retry %d in %.3f s", url, retry + 1, delay)
            delays.append(delay)
            time.sleep(delay)
            continue
        except (oa.APITimeoutError, http.TimeoutException, _DeadlineError):
            raise LLMEndpointError(
                f"request to {url} timed out after {config.timeout_s:g} s",
                code=E_TIMEOUT,
                notes=("raise the limit with --timeout, or use a faster or smaller model",),
            ) from None
        except http.DecodingError as err:
            raise LLMEndpointError(
                f"{url} sent a body that cannot be decoded: {_short(err)}", code=E_HTTP
            ) from None
        except (oa.APIConnectionError, http.TransportError) as err:
            cause = err.__cause__ or err
            raise LLMEndpointError(
                f"cannot reach the LLM endpoint {url}: {_short(cause)}",
                code=E_UNREACHABLE,
                notes=(
                    "set OPENAI_BASE_URL to an OpenAI-compatible endpoint, e.g. "
                    "http://localhost:8000/v1 for a local vLLM server",
                ),
            ) from None
        except (oa.AuthenticationError, oa.PermissionDeniedError) as err:
            raise LLMEndpointError(
                f"{url} rejected the credentials (HTTP {err.status_code}): {_short(err.message)}",
                code=E_AUTH,
                notes=("set OPENAI_API_KEY to a key this endpoint accepts",),
            ) from None
        except oa.APIStatusError as err:
            raise LLMEndpointError(
                f"{url} answered HTTP {err.status_code}: {_short(err.message)}",
                code=E_HTTP,
                notes=(f"model: {config.model}",),
            ) from None
        return dataclasses.replace(result, retry_delays_s=tuple(delays))
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
