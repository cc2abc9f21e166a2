"""Hostile LLM endpoints and replies (issue 15, "LLM transport"), over real loopback HTTP.

Each case is bounded: a regression makes a test slow (a few tens of seconds at most)
and then fail, never hang.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import make_hostile_path
from conftest import ROOT
from frontends.llm_server import ScriptedResponse, ScriptedServer, chat_reply, error_reply
from hypothesis import given
from hypothesis import strategies as st

from solar.frontends.llm import (
    LLMConfig,
    LLMConfigError,
    LLMEndpointError,
    LLMTranslationError,
    TensorSpec,
    TranslationTask,
    cache_key,
    extract_ir,
    translate_program,
)
from solar.frontends.llm.transport import make_client, request_completion
from solar.ir import DType, Program, print_program

SOURCE = "def f(x):\n    return x * 2.0\n"
TASK = TranslationTask.for_program(
    [
        TensorSpec("x0", "input", DType.F32, (4,), "get_inputs()[0]"),
        TensorSpec("y0", "output", DType.F32, (4,), "output 0"),
    ]
)
IR = (
    "solar-ir 1\nprogram double\n\nsize N = 4\n\ninput x0 : f32[N]\noutput y0 : f32[N]\n\n"
    "kernel double {\n  for i in 0 .. N {\n    y0[i] = x0[i] * 2.0\n  }\n}\n"
)
GOOD = f"Here:\n```alir\n{IR}```\n"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def config(url: str, tmp_path: Path, **overrides: object) -> LLMConfig:
    settings: dict[str, object] = {
        "base_url": url,
        "api_key": "",
        "model": "test-model",
        "cache_dir": tmp_path / "cache",
        "timeout_s": 5.0,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.01,
        "retry_after_max_s": 0.02,
        "max_attempts": 1,
        **overrides,
    }
    return LLMConfig(**settings)  # type: ignore[arg-type]


# ------------------------------------------------------------ total deadline
def _request(url: str, tmp_path: Path, timeout_s: float) -> tuple[LLMEndpointError, float]:
    """One request through the transport (client built first: the clock covers the request)."""
    cfg = config(url, tmp_path, timeout_s=timeout_s)
    with make_client(cfg) as client:
        start = time.monotonic()
        with pytest.raises(LLMEndpointError) as info:
            request_completion(client, cfg, [{"role": "user", "content": "translate"}])
        return info.value, time.monotonic() - start


def test_slow_drip_body_fails_at_the_total_deadline(server: ScriptedServer, tmp_path: Path) -> None:
    """One byte every 30 ms: each read is quick, the whole body would take ~13 s."""
    body = chat_reply(GOOD).body
    assert len(body) * 0.03 > 10
    server.push(ScriptedResponse(200, body, drip_s=0.03))
    err, elapsed = _request(server.base_url, tmp_path, 1.0)
    assert err.code == "E0604"
    assert "timed out after 1 s" in err.message
    assert elapsed < 10.0, elapsed  # cut at the deadline, long before the body's ~13 s


def test_drip_just_under_the_read_timeout_is_cut_at_the_deadline(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """A piece every 5.4 s with a 6 s limit: no read ever times out, the deadline does."""
    body = chat_reply(GOOD).body
    server.push(ScriptedResponse(200, body, drip_s=5.4, drip_bytes=len(body) // 4))
    err, elapsed = _request(server.base_url, tmp_path, 6.0)
    assert err.code == "E0604"
    # without the socket watchdog the clock is only read after the read at 10.8 s; the
    # margin of 4 s is for a loaded machine
    assert 5.9 < elapsed < 10.0, elapsed


def test_a_quick_drip_within_the_deadline_still_succeeds(
    server: ScriptedServer, tmp_path: Path
) -> None:
    body = chat_reply(GOOD).body
    server.push(ScriptedResponse(200, body, drip_s=0.01, drip_bytes=len(body) // 5 + 1))
    result = translate_program(SOURCE, config=config(server.base_url, tmp_path), task=TASK)
    assert result.ir_text == IR


# ------------------------------------------------------------ Retry-After
@pytest.mark.parametrize(
    ("header", "value", "delay"),
    [
        ("Retry-After", "nan", 0.001),  # ignored: the exponential delay
        ("Retry-After", "NaN", 0.001),
        ("retry-after-ms", "nan", 0.001),
        ("Retry-After", "inf", 0.02),  # the cap
        ("Retry-After", "-inf", 0.0),
        ("Retry-After", "-5", 0.0),
        ("Retry-After", "1e400", 0.02),
        ("Retry-After", "9" * 400, 0.02),
        ("retry-after-ms", "1e400", 0.02),
        ("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", 0.02),
        ("Retry-After", "Mon, 01 Jan 99999999999999999999 00:00:00 GMT", 0.001),
        ("Retry-After", "soon", 0.001),
        ("Retry-After", "", 0.001),
    ],
)
def test_any_retry_after_value_gives_a_bounded_delay(
    server: ScriptedServer, tmp_path: Path, header: str, value: str, delay: float
) -> None:
    server.push(error_reply(429, "slow down", headers=((header, value),)), chat_reply(GOOD))
    result = translate_program(SOURCE, config=config(server.base_url, tmp_path), task=TASK)
    assert result.attempts[0].retry_delays_s == (delay,)


@pytest.mark.parametrize(
    "field", ["timeout_s", "backoff_base_s", "backoff_max_s", "retry_after_max_s"]
)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 1e300])
def test_non_finite_limits_are_configuration_errors(field: str, value: float) -> None:
    with pytest.raises(LLMConfigError) as info:
        LLMConfig(model="m", **{field: value})  # type: ignore[arg-type]
    assert info.value.code == "E0609"


def test_huge_retry_counts_do_not_overflow() -> None:
    assert LLMConfig(model="m", backoff_max_s=3.0).backoff_delay_s(10_000) == 3.0


# ------------------------------------------------------------ linear extraction
_OLD_FENCE = re.compile(
    r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S
)


def _blocks_by_regex(text: str) -> list[tuple[str, str]]:
    """The original one-regex fence scan: the oracle on small inputs (quadratic on big ones)."""
    return [(m.group(1).lower(), m.group(2)) for m in _OLD_FENCE.finditer(text)]


_PIECES = st.sampled_from(
    [
        "```",
        "```alir",
        "``` ir x",
        "  ```  ",
        "```python",
        "\n",
        "solar-ir 1",
        "x",
        " ",
        "\t",
        "<think>",
        "</think>",
        "`",
        "\r",
    ]
)


@given(st.lists(_PIECES, max_size=40).map("".join))
def test_fence_scan_agrees_with_the_regex(text: str) -> None:
    from solar.frontends.llm.extract import _fenced_blocks

    assert _fenced_blocks(text) == _blocks_by_regex(text)


HUGE_REPLIES = {
    "unclosed openers": "```alir\n" * 32_500,
    "openers with text": "```alir solar-ir\n" * 15_000,
    "closers only": "```\n" * 65_000,
    "think without end": "<think>" * 37_000,
    "headers": "solar-ir 1\n" * 23_000,
    "one long line": "`" * 260_000,
    "blank lines": " \t\n" * 86_000,
}


@pytest.mark.parametrize("name", sorted(HUGE_REPLIES))
def test_extraction_of_a_260kb_reply_is_fast(name: str) -> None:
    reply = HUGE_REPLIES[name]
    assert 250_000 < len(reply) < 262_144
    start = time.process_time()  # this process's CPU time: other jobs' load does not count
    extract_ir(reply)
    assert time.process_time() - start < 2.0


def test_a_260kb_hostile_reply_is_one_failed_attempt(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.push(chat_reply(HUGE_REPLIES["unclosed openers"]))
    start = time.process_time()
    with pytest.raises(LLMTranslationError) as info:
        translate_program(SOURCE, config=config(server.base_url, tmp_path), task=TASK)
    assert time.process_time() - start < 10.0
    assert [a.outcome for a in info.value.attempts] == ["no-ir"]


# ------------------------------------------------------------ cache entries
def _rejects_triple(program: Program) -> None:
    from solar.diagnostics import ValidationMismatchError

    if "* 3.0" in print_program(program):
        raise ValidationMismatchError("output `y0` differs at index [0]")


def test_tampered_cache_entry_is_a_log_line_not_a_python_warning(
    server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = config(server.base_url, tmp_path)
    server.push(chat_reply(GOOD), chat_reply(GOOD))
    first = translate_program(SOURCE, config=cfg, task=TASK, check=_rejects_triple)
    assert first.cache_path is not None
    entry = json.loads(first.cache_path.read_text())
    entry["ir"] = entry["ir"].replace("* 2.0", "* 3.0")
    first.cache_path.write_text(json.dumps(entry))
    with warnings.catch_warnings(), caplog.at_level("WARNING", logger="solar"):
        warnings.simplefilter("error")  # any Python warning fails the test
        again = translate_program(SOURCE, config=cfg, task=TASK, check=_rejects_triple)
    assert not again.from_cache
    assert len(server.requests) == 2
    assert "warning[E0612]: cached translation" in caplog.text
    assert "is rejected now (E0310" in caplog.text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "huge", "deep-json"])
def test_unreadable_cache_entries_are_misses(
    server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    cfg = config(server.base_url, tmp_path)
    path = cfg.cache_dir / f"{cache_key(SOURCE, TASK, model='test-model')}.json"
    cfg.cache_dir.mkdir(parents=True)
    if kind == "deep-json":
        path.write_text("[" * 200_000 + "]" * 200_000)
    else:
        make_hostile_path(path, kind)
    server.push(chat_reply(GOOD))
    start = time.monotonic()
    with warnings.catch_warnings(), caplog.at_level("WARNING", logger="solar"):
        warnings.simplefilter("error")
        result = translate_program(SOURCE, config=cfg, task=TASK)
    assert time.monotonic() - start < 120.0  # a FIFO wait hangs; a loaded machine does not
    assert not result.from_cache
    assert "warning[E0612]: ignoring" in caplog.text


@pytest.mark.torch
@pytest.mark.slow
def test_cli_shows_a_tampered_entry_as_a_solar_warning(
    server: ScriptedServer, tmp_path: Path
) -> None:
    """End to end: `solar analyze --frontend llm` on a recorded sample with an edited entry."""
    pytest.importorskip("torch")
    cache = tmp_path / "cache"
    shutil.copytree(ROOT / "samples" / "llm" / "cache", cache)
    entry_path = next(p for p in cache.glob("*.json") if "program scaled_sq_relu" in p.read_text())
    entry = json.loads(entry_path.read_text())
    good_ir = entry["ir"]
    entry["ir"] = good_ir.replace("0.5 * r[m, n]", "0.25 * r[m, n]")
    assert entry["ir"] != good_ir
    entry_path.write_text(json.dumps(entry))
    server.push(chat_reply(f"```alir\n{good_ir}```\n"))
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": ""}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "solar",
            "analyze",
            str(ROOT / "samples/llm/scaled_sq_relu.py"),
            "--frontend",
            "llm",
            "--model",
            "recorded",
            "--llm-cache-dir",
            str(cache),
            "--timeout",
            "20",
            "--max-attempts",
            "1",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning[E0612]: cached translation" in proc.stderr
    assert "is rejected now (E031" in proc.stderr
    assert "UserWarning" not in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(server.requests) == 1
