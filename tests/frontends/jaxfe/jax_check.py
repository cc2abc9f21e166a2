"""Test support: run a JAX function or program file through the whole JAX frontend.

`check_fn(fn, *inputs)` captures ``fn`` on ``inputs`` (abstract values), lowers it,
round-trips the IR text through the parser, verifies it, builds reference values by
running the real program (jit, CPU), executes the IR with
`solar.validate.execute_program` and compares every output. `program_costs` sums the
einsum cost counts (FLOPs, unfused per-kernel bytes, fused compulsory bytes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from solar.frontends.jaxfe import (
    JaxCapture,
    LoweredProgram,
    lower_jaxpr,
    reference_data,
    trace_function,
)
from solar.ir import Program, parse_program, print_program, verify_program

jax = pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[3]
SAMPLES = ROOT / "samples" / "jax"


def run_lowered(lowered: LoweredProgram, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Print, re-parse, verify and execute a lowered program."""
    from solar.validate import execute_program

    program = parse_program(print_program(lowered.program))
    assert program == lowered.program, "printing and parsing changed the program"
    verify_program(program)
    return execute_program(program, inputs)


def assert_outputs_close(
    got: dict[str, np.ndarray], want: dict[str, np.ndarray], rtol: float, atol: float
) -> None:
    """Compare executed outputs with reference outputs (exact for ints and bools)."""
    assert set(want) <= set(got), f"missing outputs {set(want) - set(got)}"
    for name, w in want.items():
        g = np.asarray(got[name])
        assert g.shape == w.shape, f"{name}: shape {g.shape} != {w.shape}"
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w, err_msg=name)
        else:
            np.testing.assert_allclose(
                g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, err_msg=name
            )


def check_capture(
    capture: JaxCapture, *, rtol: float = 1e-5, atol: float = 1e-5, covered: bool = True
) -> LoweredProgram:
    """Lower a capture, execute the IR and compare with the real program."""
    lowered = lower_jaxpr(capture)
    if covered:
        assert lowered.fully_covered, f"uncovered: {lowered.coverage}"
    inputs, want = reference_data(capture, lowered=lowered)
    assert_outputs_close(run_lowered(lowered, inputs), want, rtol, atol)
    return lowered


def check_fn(
    fn: Any, *inputs: Any, rtol: float = 1e-5, atol: float = 1e-5, covered: bool = True
) -> LoweredProgram:
    """Lower ``fn(*inputs)`` through the frontend, execute the IR and compare with jax."""
    return check_capture(trace_function(fn, inputs), rtol=rtol, atol=atol, covered=covered)


def program_costs(program: Program) -> tuple[float, float, float]:
    """``(FLOPs, unfused bytes, fused bytes)`` of a program at its default sizes."""
    from solar.bounds import evaluate_costs
    from solar.einsum import lift_to_einsum

    c = evaluate_costs(lift_to_einsum(program))
    return (
        float(c.group_flops.sum()),
        float(c.read_bytes.sum() + c.written_bytes.sum()),
        float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()),
    )


def rand(*shape: int, seed: int = 0, dtype: Any = np.float32) -> np.ndarray:
    """A seeded standard-normal array."""
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(dtype)
