"""Execution faults: each gives its SOLAR error code, the statement, and its location."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_cli

from solar.diagnostics import ExecutionError, ResourceError
from solar.ir import parse_program
from solar.validate import estimate_memory_bytes, execute_program, run_program
from solar.validate.memory import memory_budget_bytes, over_budget_message

HEADER = "solar-ir 1\nprogram bad\n"
X4 = np.arange(4, dtype=np.float32)
COPY4 = (
    "input X : f32[4]\noutput Y : f32[4]\nkernel k {\n  for i in 0 .. 4 {\n    Y[i] = X[i]\n"
    "  }\n}\n"
)

# name, program (line 3 onward), inputs, code, (line, col), message fragment
FAULTS = [
    (
        "read_out_of_bounds",
        "input X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = X[i + 1]\n  }\n}\n",
        {"X": X4},
        "E0301",
        (7, 5),
        "subscript 0 of `X` out of bounds (extent 4) at i=3",
    ),
    (
        "write_out_of_bounds",
        "input X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = X[i]\n    Y[2 * i] = X[i]\n  }\n}\n",
        {"X": X4},
        "E0301",
        (8, 5),
        "of `Y` out of bounds",
    ),
    (
        "guard_too_weak",
        "input X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = 0.0\n    if i >= 1 {\n      Y[i] = X[i + 1]\n"
        "    }\n  }\n}\n",
        {"X": X4},
        "E0301",
        (9, 7),
        "at i=3",
    ),
    (
        "gather_out_of_bounds",
        "input idx : i64[3]\ninput X : f32[4]\noutput Y : f32[3]\nkernel k {\n"
        "  for i in 0 .. 3 {\n    Y[i] = X[idx[i]]\n  }\n}\n",
        {"idx": np.array([0, 9, 1]), "X": X4},
        "E0301",
        (8, 5),
        "at i=1",
    ),
    (
        "uninitialised_read",
        "input X : f32[4]\ntemp T : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = X[i] + T[i]\n  }\n}\n",
        {"X": X4},
        "E0302",
        (8, 5),
        "never-written element of `T` at i=0",
    ),
    (
        "reduce_into_unwritten",
        "input X : f32[4, 4]\noutput S : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    for j in 0 .. 4 {\n      S[i] += X[i, j]\n    }\n  }\n}\n",
        {"X": np.ones((4, 4), dtype=np.float32)},
        "E0302",
        (8, 7),
        "reduction into a never-written element of `S`",
    ),
    (
        "partially_written_local",
        "input X : f32[4, 4]\noutput Y : f32[4, 4]\nkernel k {\n  local L : f32[4, 4]\n"
        "  for i in 0 .. 4 {\n    for j in 0 .. i {\n      L[i, j] = X[i, j]\n    }\n  }\n"
        "  for i in 0 .. 4 {\n    for j in 0 .. 4 {\n      Y[i, j] = L[i, j]\n    }\n  }\n}\n",
        {"X": np.ones((4, 4), dtype=np.float32)},
        "E0302",
        (14, 7),
        "at i=0, j=0",
    ),
    (
        "integer_division_by_zero",
        "input I : i64[4]\ninput J : i64[4]\noutput Y : i64[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = I[i] // J[i]\n  }\n}\n",
        {"I": np.arange(4), "J": np.array([1, 2, 0, 1])},
        "E0303",
        (8, 5),
        "integer division by zero at i=2",
    ),
    (
        "modulo_by_zero_in_subscript",
        "size Z = 3\ninput X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = X[i % (i - Z)]\n  }\n}\n",
        {"X": X4},
        "E0303",
        (8, 5),
        "integer modulo by zero at i=3",
    ),
    (
        "negative_integer_power",
        "input I : i64[4]\noutput Y : i64[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = pow(I[i], i - 2)\n  }\n}\n",
        {"I": np.arange(4)},
        "E0307",
        (7, 5),
        "negative integer power at i=0",
    ),
    (
        "float_subscript",
        "input X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = X[X[i]]\n  }\n}\n",
        {"X": X4},
        "E0307",
        (7, 5),
        "is not an integer",
    ),
    (
        "write_to_input",
        "input X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = X[i]\n    X[i] = 0.0\n  }\n}\n",
        {"X": X4},
        "E0309",
        (8, 5),
        "write to input `X`",
    ),
    (
        "python_int_overflow_becomes_a_fault",
        "size Big = 9223372036854775807\ninput X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = f32(i * (Big + 1))\n  }\n}\n",
        {"X": X4},
        "E0307",
        (8, 5),
        "invalid operation (OverflowError",
    ),
    (
        "unknown_tensor",
        "input X : f32[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = Z[i]\n  }\n}\n",
        {"X": X4},
        "E0309",
        (7, 5),
        "unknown tensor `Z`",
    ),
]


@pytest.mark.parametrize(
    ("text", "inputs", "code", "location", "fragment"),
    [f[1:] for f in FAULTS],
    ids=[f[0] for f in FAULTS],
)
def test_fault(
    text: str,
    inputs: dict[str, np.ndarray],
    code: str,
    location: tuple[int, int],
    fragment: str,
) -> None:
    program = parse_program(HEADER + text, filename="bad.alir")
    with pytest.raises(ExecutionError) as info:
        execute_program(program, inputs)
    err = info.value
    assert err.code == code
    assert err.span is not None
    assert (err.span.line, err.span.col) == location
    assert fragment in err.message
    rendered = err.render()
    assert rendered.startswith(f"error[{code}]")
    assert f"bad.alir:{location[0]}:{location[1]}" in rendered


def test_inputs_are_never_modified() -> None:
    text = COPY4.replace("Y[i] = X[i]", "Y[i] = X[i]\n    Y[i] += X[i]")
    x = X4.copy()
    got = execute_program(parse_program(HEADER + text), {"X": x})
    np.testing.assert_array_equal(x, X4)
    np.testing.assert_array_equal(got["Y"], 2 * X4)
    got["Y"][0] = 42.0  # outputs are the caller's own arrays
    np.testing.assert_array_equal(x, X4)


def test_fault_names_the_statement() -> None:
    program = parse_program(HEADER + FAULTS[0][1])
    with pytest.raises(ExecutionError, match=r"in `Y\[i\] = X\[i \+ 1\]`"):
        execute_program(program, FAULTS[0][2])


def test_masked_points_never_fault() -> None:
    # Out-of-bounds subscripts, division by zero and unwritten reads at guarded-off
    # points are not executed, so they are not faults; float x / 0 is IEEE.
    text = (
        "input X : f32[4]\ninput J : i64[4]\noutput Y : f32[4]\nkernel k {\n"
        "  for i in 0 .. 4 {\n    Y[i] = X[i] / 0.0\n"
        "    if i < 3 and J[i] != 0 {\n      Y[i] = X[i + 1] + f32(i // J[i])\n    }\n  }\n}\n"
    )
    got = execute_program(parse_program(HEADER + text), {"X": X4, "J": np.array([1, 0, 2, 0])})
    np.testing.assert_array_equal(got["Y"], [1.0, np.inf, 4.0, np.inf])


INPUT_FAULTS = [
    ("missing", {}, "missing input `X`"),
    ("wrong_shape", {"X": np.zeros(5, np.float32)}, "has shape (5,), expected (4,)"),
    ("wrong_kind", {"X": np.zeros(4, np.complex64)}, "has dtype complex64"),
    ("unknown", {"X": X4, "W": X4}, "unknown input(s) W"),
]


@pytest.mark.parametrize(
    ("inputs", "fragment"), [f[1:] for f in INPUT_FAULTS], ids=[f[0] for f in INPUT_FAULTS]
)
def test_input_fault(inputs: dict[str, np.ndarray], fragment: str) -> None:
    text = COPY4
    with pytest.raises(ExecutionError) as info:
        execute_program(parse_program(HEADER + text), inputs)
    assert info.value.code == "E0304"
    assert fragment in info.value.message


def test_output_not_fully_written() -> None:
    text = COPY4.replace("0 .. 4", "0 .. 3")
    with pytest.raises(ExecutionError) as info:
        execute_program(parse_program(HEADER + text), {"X": X4})
    assert info.value.code == "E0306"
    assert info.value.span is not None
    assert info.value.span.line == 4
    assert "first at [3]" in info.value.message


def test_memory_budget_refused_before_allocating() -> None:
    text = (
        "size N = 100000\ninput X : f32[N]\noutput Y : f32[N]\nkernel k {\n"
        "  for i in 0 .. N {\n    Y[i] = X[i]\n  }\n}\n"
    )
    with pytest.raises(ResourceError) as info:
        execute_program(parse_program(HEADER + text), {}, memory_budget_bytes=1 << 16)
    assert info.value.code == "E0305"
    assert "memory budget" in info.value.message


def test_cli_and_executor_refuse_with_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`solar ir run` checks the budget before the executor does; both say it one way."""
    text = HEADER + (
        f"size N = {2**40}\ninput X : f32[N]\noutput Y : f32[N]\nkernel k {{\n"
        "  for i in 0 .. N {\n    Y[i] = X[i]\n  }\n}\n"
    )
    program = parse_program(text)
    with pytest.raises(ResourceError) as info:
        execute_program(program, {})
    expected = over_budget_message(
        "`bad`", estimate_memory_bytes(program, {}), memory_budget_bytes())
    assert info.value.message == expected
    (tmp_path / "big.alir").write_text(text)
    r = run_cli(capsys, "ir", "run", str(tmp_path / "big.alir"))
    assert r.code == 1 and "error[E0305]" in r.err
    assert expected in r.err


def test_time_budget_stops_execution() -> None:
    text = COPY4
    with pytest.raises(ResourceError) as info:
        run_program(parse_program(HEADER + text), {"X": X4}, deadline=time.monotonic() - 1)
    assert info.value.code == "E0308"
