"""Configuration of the LLM frontend: endpoint, model, limits, retries and cache.

Contract: `LLMConfig` is a frozen value. Fields left out take their defaults from
the environment *when the config is built* (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``, ``SOLAR_LLM_MODEL``, ``SOLAR_CACHE_DIR``), so a CLI builds
one config from its flags and passes it down; nothing reads the environment
later. The API key is never part of ``repr`` or of a cache key.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from solar.frontends.llm.errors import E_BAD_CONFIG, LLMConfigError

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_REPLY_BYTES",
    "MAX_TIMEOUT_S",
    "PLACEHOLDER_API_KEY",
    "LLMConfig",
    "default_cache_dir",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MAX_REPLY_BYTES = 256 * 1024
MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""Upper limit of ``timeout_s`` (a week): socket timeouts must fit the platform's clock."""
PLACEHOLDER_API_KEY = "solar-no-key"
"""Sent when no key is configured: local servers (vLLM, llama.cpp, Ollama) ignore it."""


def default_cache_dir() -> Path:
    """``$SOLAR_CACHE_DIR/llm`` if that variable is set, else ``./.solar-cache/llm``.

    >>> default_cache_dir().name
    'llm'
    """
    root = os.environ.get("SOLAR_CACHE_DIR", "").strip()
    base = Path(root) if root else Path.cwd() / ".solar-cache"
    return base / "llm"


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and " " not in url


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """How to reach the model and how hard to try.

    Attributes:
        base_url: OpenAI-compatible endpoint, e.g. ``http://localhost:8000/v1``
            (default ``$OPENAI_BASE_URL``, else the OpenAI API).
        api_key: bearer key (default ``$OPENAI_API_KEY``); empty is allowed for
            local servers, a placeholder is then sent.
        model: model name as the endpoint knows it (default ``$SOLAR_LLM_MODEL``);
            required (E0607). Part of the cache key.
        temperature: sampling temperature (0 = as deterministic as the server allows).
        max_attempts: replies to try (the first plus repairs) before E0605.
        timeout_s: per-request limit; a request that takes longer fails with E0604.
        max_reply_bytes: cap on one reply's text (UTF-8 bytes); a larger reply is
            a rejected attempt (E0610). The HTTP body read is capped at
            ``2 * max_reply_bytes + 64 KiB``.
        cache_dir: where translations are cached (default `default_cache_dir`).
        use_cache: read the cache; ``False`` (``--no-cache``) forces a fresh
            translation, which is still written back on success.
        max_retries: retries of a request answered with HTTP 429 before E0603.
        backoff_base_s: delay before retry ``k`` (from 0) is
            ``min(backoff_max_s, backoff_base_s * 2**k)`` unless the server
            sends ``Retry-After``/``retry-after-ms``, which is honoured up to
            ``retry_after_max_s``. No jitter, so runs are reproducible.
        backoff_max_s: cap of the exponential delay.
        retry_after_max_s: cap on a server-requested delay.
    """

    base_url: str = field(default_factory=lambda: _env("OPENAI_BASE_URL", DEFAULT_BASE_URL))
    api_key: str = field(default_factory=lambda: _env("OPENAI_API_KEY"), repr=False)
    model: str = field(default_factory=lambda: _env("SOLAR_LLM_MODEL"))
    temperature: float = 0.0
    max_attempts: int = 4
    timeout_s: float = 120.0
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES
    cache_dir: Path = field(default_factory=default_cache_dir)
    use_cache: bool = True
    max_retries: int = 3
    backoff_base_s: float = 1.0
    backoff_max_s: float = 20.0
    retry_after_max_s: float = 60.0

    def __post_init__(self) -> None:
        problems = []
        if self.max_attempts < 1:
            problems.append(f"max_attempts must be at least 1, got {self.max_attempts}")
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            problems.append(
                f"timeout_s must be in (0, {MAX_TIMEOUT_S:g}] seconds, got {self.timeout_s}"
            )
        if self.max_reply_bytes < 1:
            problems.append(f"max_reply_bytes must be positive, got {self.max_reply_bytes}")
        if self.max_retries < 0:
            problems.append(f"max_retries must be >= 0, got {self.max_retries}")
        delays = (self.backoff_base_s, self.backoff_max_s, self.retry_after_max_s)
        if not all(0 <= d <= MAX_TIMEOUT_S for d in delays):
            problems.append(f"backoff delays must be in [0, {MAX_TIMEOUT_S:g}] seconds")
        if not 0.0 <= self.temperature <= 2.0:
            problems.append(f"temperature must be in [0, 2], got {self.temperature}")
        if not _is_http_url(self.base_url):
            problems.append(f"base_url must be an http(s) URL with a host, got `{self.base_url}`")
        if problems:
            raise LLMConfigError(
                "invalid LLM configuration", code=E_BAD_CONFIG, notes=tuple(problems)
            )

    @property
    def client_api_key(self) -> str:
        """The key handed to the client: the configured one or `PLACEHOLDER_API_KEY`."""
        return self.api_key or PLACEHOLDER_API_KEY

    @property
    def max_body_bytes(self) -> int:
        """Cap on the HTTP response body read (envelope and JSON escaping included)."""
        return 2 * self.max_reply_bytes + 64 * 1024

    def backoff_delay_s(self, retry: int, server_delay_s: float | None = None) -> float:
        """Delay before 429-retry number ``retry`` (0-based).

        >>> LLMConfig(model="m", backoff_base_s=0.5, backoff_max_s=3).backoff_delay_s(3)
        3.0
        >>> LLMConfig(model="m", retry_after_max_s=10).backoff_delay_s(0, 99.0)
        10.0
        >>> LLMConfig(model="m", backoff_base_s=0.5).backoff_delay_s(0, float("nan"))
        0.5
        """
        if server_delay_s is not None and not math.isnan(server_delay_s):
            return float(min(max(server_delay_s, 0.0), self.retry_after_max_s))
        # 2**64 s outlasts any cap; a larger exponent would overflow the float
        return float(min(self.backoff_max_s, self.backoff_base_s * 2.0 ** min(retry, 64)))
