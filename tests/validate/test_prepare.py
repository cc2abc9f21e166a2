"""Execution plans: fission hazards, privatised locals, sequential fallback, axes."""

from __future__ import annotations

import numpy as np
import pytest

from solar.ir import For, parse_program, resolve_sizes
from solar.validate import execute_program
from solar.validate.prepare import prepare_program

HEAD = "solar-ir 1\nprogram p\nsize N = 4\ninput X : f32[N, N]\noutput C : f32[N, N]\n"


def _prepare(text: str):  # type: ignore[no-untyped-def]
    program = parse_program(HEAD + text)
    return program, prepare_program(program, resolve_sizes(program))


def test_scalar_accumulator_is_privatised_over_both_loops() -> None:
    program, prepared = _prepare(
        "kernel k {\n  local acc : f32[]\n  for i in 0 .. N {\n    for j in 0 .. N {\n"
        "      acc[] = 0.0\n      for k in 0 .. N {\n        acc[] += X[i, k] * X[k, j]\n"
        "      }\n      C[i, j] = acc[]\n    }\n  }\n}\n"
    )
    assert sorted(prepared.privatized) == ["k.acc", "k.acc"]
    (decl,) = prepared.program.kernels[0].locals
    assert len(decl.shape) == 2
    assert not prepared.plans[0].sequential
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(execute_program(program, {"X": x})["C"], x @ x, rtol=1e-5)


def test_read_before_write_runs_sequentially() -> None:
    # prev[] carries a value from the previous row: not privatisable
    program, prepared = _prepare(
        "kernel k {\n  local prev : f32[]\n  prev[] = 0.0\n  for i in 0 .. N {\n"
        "    for j in 0 .. N {\n      C[i, j] = prev[] + X[i, j]\n    }\n"
        "    prev[] = X[i, 0]\n  }\n}\n"
    )
    assert prepared.privatized == ()
    (outer,) = (s for s in prepared.program.kernels[0].body if isinstance(s, For))
    assert id(outer) in prepared.plans[0].sequential
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    prev = np.concatenate([[0.0], x[:-1, 0]])
    np.testing.assert_allclose(execute_program(program, {"X": x})["C"], x + prev[:, None])


def test_no_hazard_keeps_loops_vectorised() -> None:
    _, prepared = _prepare(
        "kernel k {\n  for i in 0 .. N {\n    for j in 0 .. N {\n      C[i, j] = X[j, i]\n"
        "    }\n  }\n}\n"
    )
    assert prepared.privatized == ()
    assert not prepared.plans[0].sequential
    assert prepared.plans[0].ndim == 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("if N > 3 { C[0, 0] = 1.0 }", 1.0),
        ("if N > 4 { C[0, 0] = 1.0 }", 0.0),
        ("for i in 2 .. 1 { C[0, 0] = 5.0 }", 0.0),
    ],
)
def test_scalar_guards_and_empty_loops(body: str, expected: float) -> None:
    program = parse_program(
        HEAD + "kernel k {\n  for i in 0 .. N {\n    for j in 0 .. N {\n      C[i, j] = 0.0\n"
        f"    }}\n  }}\n  {body}\n}}\n"
    )
    got = execute_program(program, {"X": np.zeros((4, 4), np.float32)})["C"]
    assert got[0, 0] == expected
