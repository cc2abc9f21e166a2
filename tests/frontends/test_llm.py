"""LLM frontend: real HTTP through the real openai client against a scripted local server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from llm_server import ScriptedResponse, ScriptedServer, chat_reply, closed_port_url, error_reply

from solar.diagnostics import ValidationMismatchError
from solar.frontends.kit import param_name
from solar.frontends.llm import (
    PROMPT_VERSION,
    LLMConfig,
    LLMConfigError,
    LLMEndpointError,
    LLMTranslationError,
    TensorSpec,
    TranslationTask,
    cache_key,
    clear_cache,
    extract_ir,
    load_entry,
    program_io_names,
    translate_program,
)
from solar.frontends.llm.prompt import system_prompt, user_prompt
from solar.ir import DType, Program, print_program

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """\
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.arange(4.0)]


def get_init_inputs():
    return []
"""

TASK = TranslationTask.for_program(
    [
        TensorSpec("x0", "input", DType.F32, (4,), "get_inputs()[0]"),
        TensorSpec("y0", "output", DType.F32, (4,), "output 0 of forward()"),
    ]
)


def program_text(body: str = "y0[i] = x0[i] * 2.0", *, out: str = "y0") -> str:
    return (
        "solar-ir 1\nprogram double\n\nsize N = 4\n\ninput x0 : f32[N]\n"
        f"output {out} : f32[N]\n\nkernel double {{\n  for i in 0 .. N {{\n"
        f"    {body}\n  }}\n}}\n"
    )


def fenced(ir: str, prose: str = "Here is the program.") -> str:
    return f"{prose}\n\n```alir\n{ir}```\n"


GOOD = fenced(program_text())


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as srv:
        yield srv


def config_for(url: str, tmp_path: Path, **overrides: object) -> LLMConfig:
    settings: dict[str, object] = {
        "base_url": url,
        "api_key": "",
        "model": "test-model",
        "cache_dir": tmp_path / "cache",
        "timeout_s": 5.0,
        "backoff_base_s": 0.001,
        "backoff_max_s": 0.01,
        **overrides,
    }
    return LLMConfig(**settings)  # type: ignore[arg-type]


def last_user_message(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    assert messages[-1]["role"] == "user"
    return str(messages[-1]["content"])


# ---------------------------------------------------------------------- happy path
def test_returns_correct_ir(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(chat_reply(GOOD, prompt_tokens=1234, completion_tokens=56))
    result = translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert isinstance(result.program, Program)
    assert [t.name for t in result.program.tensors] == ["x0", "y0"]
    assert not result.from_cache
    assert [(a.number, a.outcome) for a in result.attempts] == [(1, "ok")]
    assert (result.prompt_tokens, result.completion_tokens) == (1234, 56)
    assert result.ir_text == program_text()
    (request,) = server.requests
    assert request["_path"] == "/v1/chat/completions"
    assert request["_authorization"] == "Bearer solar-no-key"
    assert (request["model"], request["temperature"]) == ("test-model", 0.0)
    system, user = request["messages"]
    assert system["role"] == "system"
    assert "solar-ir 1" in system["content"]
    assert "```lark" in system["content"]
    assert user["role"] == "user"
    assert SOURCE.rstrip() in user["content"]
    assert "input x0 : f32[4]" in user["content"]
    assert "`y<i>`" in user["content"]


def test_syntax_error_then_fix_sends_the_diagnostic(server: ScriptedServer, tmp_path: Path) -> None:
    broken = fenced(program_text("y0[i] = x0[i] ** 2.0"))
    server.push(chat_reply(broken), chat_reply(GOOD))
    result = translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert [a.outcome for a in result.attempts] == ["syntax-error", "ok"]
    assert result.attempts[0].diagnostic.startswith("error[E01")
    assert len(server.requests) == 2
    second = server.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == broken
    repair = last_user_message(server.requests[1])
    assert "error[E01" in repair
    assert "--> attempt-1.alir:" in repair
    assert "^" in repair


def test_verify_error_then_fix(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(chat_reply(fenced(program_text("y0[i] = x0[j] * 2.0"))), chat_reply(GOOD))
    result = translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert [a.outcome for a in result.attempts] == ["verify-error", "ok"]
    assert "error[E02" in last_user_message(server.requests[1])


def test_interface_mismatch_then_fix(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(chat_reply(fenced(program_text("y[i] = x0[i] * 2.0", out="y"))), chat_reply(GOOD))
    result = translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert [a.outcome for a in result.attempts] == ["interface-mismatch", "ok"]
    repair = last_user_message(server.requests[1])
    assert "error[E0608]" in repair
    assert "missing `output y0 : f32[4]`" in repair
    assert "did you mean `y0`?" in repair


def execute_check(program: Program) -> None:
    """Run the IR with the real executor and compare with numpy (x * 2)."""
    validate = pytest.importorskip("solar.validate")
    execute_program = getattr(validate, "execute_program", None)
    if execute_program is None:
        pytest.skip("solar.validate.execute_program is not available yet")
    x = np.arange(4.0, dtype=np.float32)
    got = np.asarray(execute_program(program, {"x0": x})["y0"])
    want = x * 2.0
    bad = np.flatnonzero(~np.isclose(got, want))
    if bad.size:
        i = int(bad[0])
        raise ValidationMismatchError(
            f"output `y0` differs at index [{i}]: got {got[i]:g}, expected {want[i]:g} "
            f"(max abs error {float(np.max(np.abs(got - want))):g})"
        )


def test_validation_mismatch_then_fix(server: ScriptedServer, tmp_path: Path) -> None:
    wrong = fenced(program_text("y0[i] = x0[i] + 2.0"))
    server.push(chat_reply(wrong), chat_reply(GOOD))
    result = translate_program(
        SOURCE, config=config_for(server.base_url, tmp_path), task=TASK, check=execute_check
    )
    assert [a.outcome for a in result.attempts] == ["validation-mismatch", "ok"]
    repair = last_user_message(server.requests[1])
    assert "computes different values" in repair
    assert "output `y0` differs at index [0]: got 2, expected 0" in repair


def test_garbage_until_attempts_run_out(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(*[chat_reply("I am sorry, I cannot help with that.")] * 3)
    config = config_for(server.base_url, tmp_path, max_attempts=3)
    with pytest.raises(LLMTranslationError) as info:
        translate_program(SOURCE, config=config, task=TASK)
    err = info.value
    assert err.code == "E0605"
    assert err.exit_code == 1
    assert [a.outcome for a in err.attempts] == ["no-ir"] * 3
    assert len(server.requests) == 3
    assert "error[E0611]" in err.render()
    assert "error[E0611]" in last_user_message(server.requests[2])
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------- HTTP failures
def test_rate_limited_then_ok(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(error_reply(429, "slow down", headers=(("Retry-After", "0"),)), chat_reply(GOOD))
    result = translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert len(server.requests) == 2
    assert [a.outcome for a in result.attempts] == ["ok"]
    assert result.attempts[0].retry_delays_s == (0.0,)


def test_rate_limited_until_retries_run_out(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(*[error_reply(429, "slow down")] * 3)
    config = config_for(server.base_url, tmp_path, max_retries=2)
    with pytest.raises(LLMEndpointError) as info:
        translate_program(SOURCE, config=config, task=TASK)
    assert info.value.code == "E0603"
    assert len(server.requests) == 3
    assert [a.outcome for a in info.value.attempts] == ["http-error"]


def test_hang_past_the_timeout(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(ScriptedResponse(200, chat_reply(GOOD).body, delay_s=30.0))
    config = config_for(server.base_url, tmp_path, timeout_s=0.5)
    with pytest.raises(LLMEndpointError) as info:
        translate_program(SOURCE, config=config, task=TASK)
    assert info.value.code == "E0604"
    assert info.value.exit_code == 2
    assert "timed out after 0.5 s" in info.value.message


@pytest.mark.parametrize(
    ("status", "code"), [(401, "E0602"), (403, "E0602"), (404, "E0606"), (500, "E0606")]
)
def test_http_error_status(server: ScriptedServer, tmp_path: Path, status: int, code: str) -> None:
    server.push(error_reply(status, "nope"))
    with pytest.raises(LLMEndpointError) as info:
        translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert info.value.code == code
    assert f"HTTP {status}" in info.value.message
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [b'{"choices": []}', b"[" * 200_000 + b"]" * 200_000, b'{"choices": NaN}',
     b'{"choices": [' + b"9" * 5000 + b"]}"],
    ids=["no choices", "200,000-deep", "NaN", "5000 digits"],
)  # fmt: skip
def test_malformed_response_body(server: ScriptedServer, tmp_path: Path, body: bytes) -> None:
    server.push(ScriptedResponse(200, body))
    with pytest.raises(LLMEndpointError) as info:
        translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert info.value.code == "E0606"
    assert "not an OpenAI chat completion" in info.value.message


def test_connection_refused(tmp_path: Path) -> None:
    url = closed_port_url()
    with pytest.raises(LLMEndpointError) as info:
        translate_program(SOURCE, config=config_for(url, tmp_path), task=TASK)
    err = info.value
    assert err.code == "E0601"
    assert url in err.message
    assert any("OPENAI_BASE_URL" in note for note in err.notes)


def test_no_model_configured(tmp_path: Path) -> None:
    with pytest.raises(LLMConfigError) as info:
        translate_program(
            SOURCE, config=config_for(closed_port_url(), tmp_path, model=""), task=TASK
        )
    assert info.value.code == "E0607"
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "overrides",
    [
        {"max_attempts": 0},
        {"timeout_s": 0.0},
        {"temperature": 3.0},
        {"base_url": "ftp://x"},
        {"base_url": "http://"},
        {"base_url": "http://[::1"},
        {"base_url": "http://host:port/v1"},
    ],
)
def test_invalid_config(tmp_path: Path, overrides: dict[str, object]) -> None:
    with pytest.raises(LLMConfigError) as info:
        config_for("http://127.0.0.1:1/v1", tmp_path, **overrides)
    assert info.value.code == "E0609"


# ------------------------------------------------------------------------ reply cap
def test_reply_over_the_size_cap_is_a_failed_attempt(
    server: ScriptedServer, tmp_path: Path
) -> None:
    huge = fenced(program_text()) + "#" * 5000
    server.push(chat_reply(huge), chat_reply(GOOD))
    config = config_for(server.base_url, tmp_path, max_reply_bytes=2048)
    result = translate_program(SOURCE, config=config, task=TASK)
    assert [a.outcome for a in result.attempts] == ["too-large", "ok"]
    assert result.attempts[0].reply == ""
    assert "error[E0610]" in last_user_message(server.requests[1])


def test_body_over_the_read_cap_is_not_read(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(ScriptedResponse(200, b" " * 200_000), ScriptedResponse(200, b" " * 200_000))
    config = config_for(server.base_url, tmp_path, max_reply_bytes=1024, max_attempts=2)
    with pytest.raises(LLMTranslationError) as info:
        translate_program(SOURCE, config=config, task=TASK)
    assert [a.outcome for a in info.value.attempts] == ["too-large", "too-large"]


# ---------------------------------------------------------------------------- cache
def test_cache_miss_then_hit(server: ScriptedServer, tmp_path: Path) -> None:
    server.push(chat_reply(fenced(program_text("y0[i] = x0[i] ** 2"))), chat_reply(GOOD))
    config = config_for(server.base_url, tmp_path)
    first = translate_program(SOURCE, config=config, task=TASK)
    assert first.cache_path is not None
    assert first.cache_path.is_file()
    assert first.cache_path.parent == tmp_path / "cache"
    assert len(server.requests) == 2
    second = translate_program(SOURCE, config=config, task=TASK)
    assert len(server.requests) == 2  # no request: served from the cache
    assert second.from_cache
    assert second.ir_text == first.ir_text
    assert second.program == first.program
    assert [a.outcome for a in second.attempts] == ["syntax-error", "ok"]
    assert second.cache_key == cache_key(SOURCE, TASK, model="test-model")
    entry = json.loads(first.cache_path.read_text(encoding="utf-8"))
    assert entry["key_material"]["prompt_version"] == PROMPT_VERSION
    assert first.cache_path.read_text(encoding="utf-8").endswith("}\n")


def test_no_cache_makes_a_request_and_refreshes_the_entry(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.push(chat_reply(GOOD), chat_reply(GOOD, completion_tokens=7))
    config = config_for(server.base_url, tmp_path)
    translate_program(SOURCE, config=config, task=TASK)
    fresh = translate_program(
        SOURCE, config=config_for(server.base_url, tmp_path, use_cache=False), task=TASK
    )
    assert len(server.requests) == 2
    assert not fresh.from_cache
    entry = load_entry(tmp_path / "cache", fresh.cache_key)
    assert entry is not None
    assert entry.attempts[0].completion_tokens == 7


def test_cache_key_depends_on_source_model_and_shapes() -> None:
    base = cache_key(SOURCE, TASK, model="m")
    assert cache_key(SOURCE.replace("\n", "\r\n"), TASK, model="m") == base
    assert cache_key(SOURCE + "\n# edit\n", TASK, model="m") != base
    assert cache_key(SOURCE, TASK, model="other") != base
    bigger = TranslationTask.for_program(
        [TensorSpec("x0", "input", DType.F32, (8,)), TensorSpec("y0", "output", DType.F32, (8,))]
    )
    assert cache_key(SOURCE, bigger, model="m") != base


def test_corrupt_and_stale_entries_are_misses(
    server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = config_for(server.base_url, tmp_path)
    key = cache_key(SOURCE, TASK, model="test-model")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"{key}.json").write_text("{not json", encoding="utf-8")
    server.push(chat_reply(fenced(program_text("y0[i] = x0[i] + 2.0"))), chat_reply(GOOD))
    with caplog.at_level("WARNING", logger="solar.frontends.llm"):
        translate_program(SOURCE, config=config, task=TASK)
    assert "warning[E0612]: ignoring corrupt LLM cache entry" in caplog.text
    assert len(server.requests) == 1

    def rejects_addition(program: Program) -> None:
        if " + 2.0" in print_program(program):
            raise ValidationMismatchError("output `y0` differs at index [0]")

    caplog.clear()
    with caplog.at_level("WARNING", logger="solar.frontends.llm"):
        result = translate_program(SOURCE, config=config, task=TASK, check=rejects_addition)
    assert "warning[E0612]: cached translation" in caplog.text
    assert "is rejected now" in caplog.text
    assert len(server.requests) == 2
    assert not result.from_cache
    assert result.ir_text == program_text()


def test_clear_cache_only_removes_entries(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"{'a' * 64}.json").write_text("{}", encoding="utf-8")
    (cache / f"{'b' * 64}.json").write_text("{}", encoding="utf-8")
    (cache / ".tmp-x1y2z3.json").write_text("{", encoding="utf-8")
    (cache / "notes.txt").write_text("keep", encoding="utf-8")
    (cache / "sub").mkdir()
    assert clear_cache(cache) == 2
    assert sorted(p.name for p in cache.iterdir()) == ["notes.txt", "sub"]
    assert clear_cache(tmp_path / "missing") == 0


def test_op_task_round_trip(server: ScriptedServer, tmp_path: Path) -> None:
    task = TranslationTask.for_op(
        "aten::special_thing",
        "special_thing(Tensor self, float alpha) -> Tensor",
        [
            TensorSpec("a", "input", DType.F32, (4,)),
            TensorSpec("out", "output", DType.F32, (4,)),
        ],
        scalars=[("alpha", "2.0")],
    )
    ir = (
        "solar-ir 1\nprogram special_thing\ninput a : f32[4]\noutput out : f32[4]\n"
        "kernel special_thing {\n  for i in 0 .. 4 {\n    out[i] = 2.0 * a[i]\n  }\n}\n"
    )
    server.push(chat_reply(fenced(ir)))
    reference = "def special_thing(a, alpha):\n    return alpha * a\n"
    result = translate_program(reference, config=config_for(server.base_url, tmp_path), task=task)
    assert [t.name for t in result.program.tensors] == ["a", "out"]
    user = server.requests[0]["messages"][1]["content"]
    assert "The tracer cannot lower `aten::special_thing`" in user
    assert "`alpha = 2.0`" in user
    assert reference.rstrip() in user


def test_cut_off_reply_is_noted(server: ScriptedServer, tmp_path: Path) -> None:
    cut = "```alir\n" + program_text()[:60]
    server.push(chat_reply(cut, finish="length"), chat_reply(GOOD))
    result = translate_program(SOURCE, config=config_for(server.base_url, tmp_path), task=TASK)
    assert result.attempts[0].outcome == "syntax-error"
    assert "cut off by the server's output token limit" in last_user_message(server.requests[1])


# ----------------------------------------------------------------- pure helpers
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("```alir\nsolar-ir 1\nprogram a\n```", "solar-ir 1\nprogram a\n"),
        ("```ir\nsolar-ir 1\nprogram b\n```", "solar-ir 1\nprogram b\n"),
        ("text\n```\nsolar-ir 1\nprogram c\n```\nmore", "solar-ir 1\nprogram c\n"),
        ("```alir\nold\n```\n```alir\nsolar-ir 1\nprogram d\n```", "solar-ir 1\nprogram d\n"),
        ("```alir\nprogram e\n```", "program e\n"),
        ("```python\nprint('solar-ir')\n```\nsolar-ir 1\nprogram f\n", "solar-ir 1\nprogram f\n"),
        ("Sure:\nsolar-ir 1\nprogram g\n```\ntrailing", "solar-ir 1\nprogram g\n"),
        (
            "<think>```alir\nsolar-ir 1\nprogram no\n```</think>"
            "```alir\nsolar-ir 1\nprogram h\n```",
            "solar-ir 1\nprogram h\n",
        ),
        ("```python\nx = 1\n```", None),
        ("", None),
    ],
)
def test_extract_ir(reply: str, expected: str | None) -> None:
    assert extract_ir(reply) == expected


@given(
    st.lists(
        st.text(alphabet=st.characters(blacklist_characters="`<\r", codec="utf-8"), max_size=30),
        max_size=8,
    )
)
def test_extract_ir_returns_the_fenced_program(lines: list[str]) -> None:
    ir = "solar-ir 1\n" + "".join(line.replace("\n", " ") + "\n" for line in lines)
    assert extract_ir(f"Some prose.\n```alir\n{ir}```\nMore prose.") == ir


def test_program_io_names() -> None:
    names = program_io_names(3, ["fc.weight", "fc.bias", "blocks.0.ln.eps"], 2)
    assert names.inputs == ("x0", "x1", "x2")
    assert names.params == ("p_fc_weight", "p_fc_bias", "p_blocks_0_ln_eps")
    assert names.outputs == ("y0", "y1")
    assert param_name("running_mean") == "p_running_mean"
    with pytest.raises(LLMConfigError) as info:
        program_io_names(0, ["a.b", "a_b"], 1)
    assert info.value.code == "E0609"


@pytest.mark.parametrize(
    "tensors",
    [
        [TensorSpec("x0", "input", DType.F32, (4,))],  # no output
        [TensorSpec("y0", "output", DType.F32, (4,)), TensorSpec("y0", "output", DType.F32, (4,))],
        [TensorSpec("for", "output", DType.F32, (4,))],
        [TensorSpec("a.b", "output", DType.F32, (4,))],
    ],
)
def test_invalid_task(tensors: list[TensorSpec]) -> None:
    with pytest.raises(LLMConfigError) as info:
        TranslationTask.for_program(tensors)
    assert info.value.code == "E0609"


def test_user_prompt_golden(golden: object) -> None:
    op_task = TranslationTask.for_op(
        "aten::_scaled_sq_relu",
        "_scaled_sq_relu(Tensor self, float scale) -> Tensor",
        [
            TensorSpec("a", "input", DType.F32, (8, 16)),
            TensorSpec("out", "output", DType.F32, (8, 16)),
        ],
        scalars=[("scale", "0.5")],
    )
    text = (
        f"PROMPT_VERSION {PROMPT_VERSION}\n\n"
        + user_prompt(SOURCE, TASK)
        + "\n----\n\n"
        + user_prompt("def ref(a, scale):\n    return scale * a.relu() ** 2\n", op_task)
    )
    # A change here changes what the model is asked: bump PROMPT_VERSION and re-record.
    golden.check("frontends/llm_user_prompts.txt", text)  # type: ignore[attr-defined]


def test_system_prompt_carries_the_reference() -> None:
    text = system_prompt()
    assert "# Rules" in text
    assert "select(a, b, c)" in text
    assert "```lark" in text
    if (ROOT / "samples" / "ir" / "matmul.alir").is_file():
        assert "## matmul" in text
    reference = ROOT / "docs" / "ir.md"
    if reference.is_file():
        assert reference.read_text(encoding="utf-8").strip() in text
