"""Test support: run a function or module through the whole PyTorch frontend and compare.

`check_program(fn, *inputs)` captures ``fn`` on ``inputs`` (fake tensors), lowers it,
round-trips the IR text through the parser, verifies it, builds reference values with
the real program and executes the IR with `solar.validate.execute_program`, comparing
every output. It returns the lowered program for further assertions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from solar.frontends.pytorch import (
    LoweredProgram,
    lower_capture,
    reference_data,
    trace_module,
)
from solar.ir import parse_program, print_program

torch = pytest.importorskip("torch")


def run_lowered(lowered: LoweredProgram, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Print, re-parse, verify and execute a lowered program."""
    from solar.ir.verify import verify_program
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


def check_program(
    fn: Any, *inputs: Any, rtol: float = 1e-4, atol: float = 1e-5, covered: bool = True
) -> LoweredProgram:
    """Lower ``fn(*inputs)`` through the frontend, execute the IR and compare with torch."""
    capture = trace_module(fn, inputs)
    lowered = lower_capture(capture)
    if covered:
        assert lowered.fully_covered, f"uncovered ops: {lowered.coverage}"
    ins, outs = reference_data(lowered, capture)
    got = run_lowered(lowered, ins)
    assert_outputs_close(got, outs, rtol, atol)
    return lowered
