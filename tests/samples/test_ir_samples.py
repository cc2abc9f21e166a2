"""The hand-written IR samples are canonical, round-trip, and have matching numpy references."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from sample_sizes import small_ir_text

from solar.ir import parse_program, print_program, verify_program
from solar.ir.traversal import eval_int, resolve_sizes

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "samples" / "ir").glob("*.alir"))
IDS = [p.stem for p in SAMPLES]


def _load_references() -> ModuleType:
    name = "_solar_sample_references"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "tests" / "validate" / "references.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _strip_comments(text: str) -> str:
    lines = [re.sub(r"\s*#.*$", "", line).rstrip() for line in text.splitlines()]
    kept = [
        line for line, raw in zip(lines, text.splitlines(), strict=True) if line or not raw.strip()
    ]
    return "\n".join(kept) + "\n"


def test_sample_set_is_complete() -> None:
    assert len(SAMPLES) >= 20
    assert set(IDS) == set(_load_references().REFERENCES)


@pytest.mark.parametrize("path", SAMPLES, ids=IDS)
def test_sample_is_canonical(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    program = parse_program(text, filename=str(path))
    assert program.name == path.stem
    printed = print_program(program)
    assert printed == _strip_comments(text)
    assert parse_program(printed) == program


@pytest.mark.parametrize("path", SAMPLES, ids=IDS)
def test_sample_verifies(path: Path) -> None:
    program = parse_program(path.read_text(encoding="utf-8"), filename=str(path))
    info = verify_program(program)
    assert bool(info.indirect_accesses) == (path.stem == "embedding")
    assert not info.value_dependent_ifs


@pytest.mark.parametrize("path", SAMPLES, ids=IDS)
def test_reference_matches_declarations(path: Path) -> None:
    refs = _load_references()
    program = parse_program(small_ir_text(path))
    sizes = resolve_sizes(program)
    inputs = refs.make_inputs(path.stem, program, np.random.default_rng(0))
    for decl in program.tensors_with_role("input", "param"):
        shape = tuple(eval_int(d, sizes) for d in decl.shape)
        assert inputs[decl.name].shape == shape
        assert inputs[decl.name].dtype == refs.NUMPY_DTYPES[decl.dtype]
    outputs = refs.REFERENCES[path.stem](inputs)
    declared = program.tensors_with_role("output")
    assert set(outputs) == {d.name for d in declared}
    for decl in declared:
        shape = tuple(eval_int(d, sizes) for d in decl.shape)
        assert outputs[decl.name].shape == shape
        assert np.isfinite(outputs[decl.name]).all()


def test_make_inputs_draws_valid_gather_indices() -> None:
    refs = _load_references()
    path = ROOT / "samples" / "ir" / "embedding.alir"
    program = parse_program(small_ir_text(path))
    vocab = resolve_sizes(program)["V"]
    idx = refs.make_inputs("embedding", program, np.random.default_rng(0))["idx"]
    assert idx.min() >= 0
    assert idx.max() < vocab
