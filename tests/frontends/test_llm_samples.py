"""Recorded LLM translations of samples/llm: offline cache hits that compute the right thing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from llm_server import closed_port_url

from solar.frontends.llm import (
    LLMConfig,
    cache_key,
    load_entry,
    program_io_names,
    translate_program,
)
from solar.ir import parse_program

ROOT = Path(__file__).resolve().parents[2]


def load_record_script() -> object:
    path = ROOT / "samples" / "llm" / "record.py"
    spec = importlib.util.spec_from_file_location("solar_llm_record", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE_NAMES = sorted(p.stem for p in (ROOT / "samples" / "llm").glob("*.py") if p.stem != "record")


def test_every_sample_has_recorded_replies() -> None:
    assert len(SAMPLE_NAMES) >= 3
    for name in SAMPLE_NAMES:
        replies = sorted((ROOT / "samples" / "llm" / "replies" / name).glob("*.md"))
        assert len(replies) >= 2, f"samples/llm/replies/{name}/ needs a recorded transcript"


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_cache_entry_is_a_hit(name: str, tmp_path: Path) -> None:
    """The recorded entry serves `--model recorded --cache-dir samples/llm/cache` offline.

    Fails when PROMPT_VERSION, the sample or its task changed without re-recording
    (run `python samples/llm/record.py`).
    """
    pytest.importorskip("torch")
    record = load_record_script()
    path = ROOT / "samples" / "llm" / f"{name}.py"
    source, task = record.sample_task(path)  # type: ignore[attr-defined]
    config = LLMConfig(
        base_url=closed_port_url(),  # any request would fail with E0601
        api_key="",
        model=record.RECORDED_MODEL,  # type: ignore[attr-defined]
        cache_dir=record.CACHE_DIR,  # type: ignore[attr-defined]
    )
    result = translate_program(source, config=config, task=task)
    assert result.from_cache, "stale sample cache: run `python samples/llm/record.py`"
    assert result.attempts[-1].outcome == "ok"
    assert len(result.attempts) >= 2  # a realistic transcript: a repair happened
    assert {t.name for t in result.program.tensors_with_role("input", "param", "output")} == {
        t.name for t in task.tensors
    }
    # Re-recording reproduces the committed entry (diagnostic wording may drift with
    # the parser and verifier; the key, the IR and the outcomes may not).
    again = record.record_sample(path, tmp_path)  # type: ignore[attr-defined]
    assert again.cache_key == result.cache_key
    assert again.ir_text == result.ir_text
    assert [a.outcome for a in again.attempts] == [a.outcome for a in result.attempts]
    assert [a.reply for a in again.attempts] == [a.reply for a in result.attempts]


@pytest.mark.torch
@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_sample_ir_matches_torch(name: str) -> None:
    """The recorded IR computes what the sample computes (needs the executor)."""
    torch = pytest.importorskip("torch")
    validate = pytest.importorskip("solar.validate")
    execute_program = getattr(validate, "execute_program", None)
    if execute_program is None:
        pytest.skip("solar.validate.execute_program is not available yet")
    record = load_record_script()
    path = ROOT / "samples" / "llm" / f"{name}.py"
    module = record.load_sample(path)  # type: ignore[attr-defined]
    source, task = record.sample_task(path)  # type: ignore[attr-defined]
    key = cache_key(source, task, model=record.RECORDED_MODEL)  # type: ignore[attr-defined]
    entry = load_entry(record.CACHE_DIR, key)  # type: ignore[attr-defined]
    assert entry is not None
    torch.manual_seed(0)
    model = module.Model(*module.get_init_inputs())
    inputs = list(module.get_inputs())
    with torch.no_grad():
        want = model(*inputs).numpy()
    names = program_io_names(len(inputs), list(model.state_dict()), 1)
    bindings = {n: t.detach().numpy() for n, t in zip(names.inputs, inputs, strict=True)}
    for n, t in zip(names.params, model.state_dict().values(), strict=True):
        bindings[n] = t.detach().numpy()
    program = parse_program(entry.ir_text)
    got = np.asarray(execute_program(program, bindings)["y0"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
