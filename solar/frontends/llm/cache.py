"""Content-addressed on-disk cache of LLM translations.

Contract: one JSON file per translation, ``<cache_dir>/<key>.json``, where

    key = sha256(canonical JSON of {
        "format": CACHE_FORMAT,
        "prompt_version": PROMPT_VERSION,
        "model": <model name>,
        "source_sha256": sha256(<source text, CRLF -> LF, UTF-8>),
        "task": TranslationTask.describe(),   # kind, tensor names/roles/dtypes/shapes, ...
    })

(canonical JSON: sorted keys, ``(",", ":")`` separators, UTF-8). Nothing else
enters the key: not the endpoint, key, temperature or attempt budget, not the
reference docs or examples (bump `PROMPT_VERSION` to invalidate). The entry
holds the key material, the accepted IR text and the transcript of attempts,
written with sorted keys and 2-space indent so that re-recording is
byte-for-byte stable. Files are written atomically and only inside the cache
directory. An entry that is not a regular file (a FIFO, a device), larger than
`MAX_ENTRY_BYTES`, unreadable or corrupt is a miss, reported by `warn_cache` as a
``warning[E0612]`` log line (never a Python warning); nothing blocks on it and
nothing reads it past the cap.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from solar.frontends.llm.errors import E_CACHE
from solar.frontends.llm.prompt import PROMPT_VERSION
from solar.frontends.llm.result import Attempt, attempt_from_json, attempt_to_json
from solar.frontends.llm.task import TranslationTask

__all__ = [
    "CACHE_FORMAT",
    "MAX_ENTRY_BYTES",
    "CacheEntry",
    "cache_key",
    "cache_path",
    "clear_cache",
    "key_material",
    "load_entry",
    "source_sha256",
    "store_entry",
    "warn_cache",
]

CACHE_FORMAT = "solar-llm-cache/1"
MAX_ENTRY_BYTES = 64 << 20
"""Entries above this are corrupt: a real one holds a few replies of at most 256 KiB."""
Producer = Literal["translate_program", "record_cache_entry"]

_PRODUCERS = get_args(Producer)
_KEY_FILE = re.compile(r"[0-9a-f]{64}\.json\Z")
_TMP_FILE = re.compile(r"\.tmp-[A-Za-z0-9_]+\.json\Z")
_log = logging.getLogger(__name__)


def warn_cache(message: str) -> None:
    """Report a cache problem as a ``warning[E0612]: ...`` log line on the SOLAR logger."""
    _log.warning("warning[%s]: %s", E_CACHE, message)


def source_sha256(source: str) -> str:
    """SHA-256 of the source text with line endings normalised to LF.

    >>> source_sha256("a\\r\\nb") == source_sha256("a\\nb")
    True
    """
    return hashlib.sha256(source.replace("\r\n", "\n").encode("utf-8")).hexdigest()


def key_material(source: str, task: TranslationTask, *, model: str) -> dict[str, object]:
    """Everything the cache key is computed from (stored in the entry for inspection)."""
    return {
        "format": CACHE_FORMAT,
        "prompt_version": PROMPT_VERSION,
        "model": model,
        "source_sha256": source_sha256(source),
        "task": task.describe(),
    }


def _canonical(data: object) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def cache_key(source: str, task: TranslationTask, *, model: str) -> str:
    """The 64-hex-digit cache key of translating ``source`` for ``task`` with ``model``."""
    return hashlib.sha256(_canonical(key_material(source, task, model=model))).hexdigest()


def cache_path(cache_dir: Path, key: str) -> Path:
    """The entry file of ``key`` (``key`` must be a SHA-256 hex digest)."""
    if not _KEY_FILE.match(f"{key}.json"):
        raise ValueError(f"not a cache key: {key!r}")
    return cache_dir / f"{key}.json"


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One cached translation."""

    key: str
    material: Mapping[str, object]
    ir_text: str
    attempts: tuple[Attempt, ...]
    producer: Producer = "translate_program"

    def to_json_text(self) -> str:
        """Deterministic file contents (sorted keys, indent 2, trailing newline)."""
        data = {
            "format": CACHE_FORMAT,
            "key": self.key,
            "key_material": dict(self.material),
            "producer": self.producer,
            "ir": self.ir_text,
            "attempts": [attempt_to_json(a) for a in self.attempts],
        }
        return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def _entry_from_json(data: object, key: str) -> CacheEntry:
    if not isinstance(data, dict):
        raise TypeError("entry is not a JSON object")
    if data.get("format") != CACHE_FORMAT or data.get("key") != key:
        raise ValueError("format or key does not match")
    ir_text, material, attempts = data["ir"], data["key_material"], data["attempts"]
    producer = data.get("producer", "translate_program")
    if not isinstance(ir_text, str) or not isinstance(material, dict):
        raise TypeError("ir/key_material have the wrong types")
    if not isinstance(attempts, list) or producer not in _PRODUCERS:
        raise TypeError("attempts/producer have the wrong types")
    transcript = tuple(attempt_from_json(a) for a in attempts)
    return CacheEntry(key, material, ir_text, transcript, producer)


def _read_entry_text(path: Path) -> str | None:
    """The entry's text, ``None`` if missing; bounded and never blocking.

    Raises:
        OSError, UnicodeDecodeError: unreadable.
        ValueError: not a regular file, or larger than `MAX_ENTRY_BYTES`.
    """
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        data = fh.read(MAX_ENTRY_BYTES + 1)
    if len(data) > MAX_ENTRY_BYTES:
        raise ValueError(f"larger than {MAX_ENTRY_BYTES} bytes")
    return data.decode("utf-8")


def load_entry(cache_dir: Path, key: str) -> CacheEntry | None:
    """The entry for ``key``, or ``None`` on a miss (a bad file is reported by `warn_cache`)."""
    path = cache_path(cache_dir, key)
    try:
        text = _read_entry_text(path)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        warn_cache(f"ignoring unreadable LLM cache entry {path}: {err}")
        return None
    if text is None:
        return None
    from solar.files import parse_data

    try:  # DataError (a ValueError): not JSON, nested too deeply, NaN
        return _entry_from_json(parse_data(text, fmt="json"), key)
    except (ValueError, TypeError, KeyError) as err:
        warn_cache(f"ignoring corrupt LLM cache entry {path}: {err}")
        return None


def store_entry(cache_dir: Path, entry: CacheEntry) -> Path:
    """Write ``entry`` atomically into ``cache_dir`` (created if needed); return its path.

    Raises:
        OSError: the directory or file cannot be written.
    """
    path = cache_path(cache_dir, entry.key)
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=cache_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(entry.to_json_text())
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def clear_cache(cache_dir: Path) -> int:
    """Delete every cache entry (``<sha256>.json``) in ``cache_dir``; return how many.

    Leftovers of interrupted writes (``.tmp-*.json``) go too, uncounted. Other
    files and subdirectories are left alone, so pointing this at the wrong
    directory cannot delete anything but cache entries. A missing directory
    counts as empty.
    """
    if not cache_dir.is_dir():
        return 0
    removed = 0
    for path in sorted(cache_dir.iterdir()):
        if not path.is_file():
            continue
        if _KEY_FILE.match(path.name):
            path.unlink()
            removed += 1
        elif _TMP_FILE.match(path.name):  # left behind by an interrupted write
            path.unlink()
    return removed
