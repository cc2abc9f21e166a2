"""Temps live from their first kernel to their last (Note [Temp lifetimes])."""

from __future__ import annotations

import numpy as np
import pytest

from solar.ir import parse_program
from solar.validate import estimate_memory_bytes, execute_program
from solar.validate.state import temp_lifetimes

N = 1 << 18  # 1 MiB per f32 temp


def _chain(kernels: int) -> str:
    """``t0 = x + 1``, ``t_k = t_{k-1} * 2``, ..., ``y = t_last - 1``: one temp per kernel."""
    decls = "".join(f"temp t{k} : f32[N]\n" for k in range(kernels))
    body = ["kernel k0 {\n  for i in 0 .. N {\n    t0[i] = x[i] + 1.0\n  }\n}\n"]
    for k in range(1, kernels):
        body.append(f"kernel k{k} {{\n  for i in 0 .. N {{\n    t{k}[i] = t{k - 1}[i] * 2.0\n"
                    "  }\n}\n")
    body.append(f"kernel out {{\n  for i in 0 .. N {{\n    y[i] = t{kernels - 1}[i] - 1.0\n"
                "  }\n}\n")
    return (f"solar-ir 1\nprogram chain\nsize N = {N}\ninput x : f32[N]\n{decls}"
            f"output y : f32[N]\n" + "".join(body))


def test_lifetimes_span_first_to_last_touch() -> None:
    program = parse_program(_chain(4))
    assert temp_lifetimes(program) == {"t0": (0, 1), "t1": (1, 2), "t2": (2, 3), "t3": (3, 4)}


@pytest.mark.parametrize("kernels", [2, 8, 32])
def test_the_estimate_charges_the_live_set_not_every_temp(kernels: int) -> None:
    # two temps (data + written mask: 5 bytes per element) are live at any kernel, so
    # the estimate does not grow with the chain's length
    short = estimate_memory_bytes(parse_program(_chain(2)))
    assert estimate_memory_bytes(parse_program(_chain(kernels))) == short
    assert short < 32 * 5 * N  # the 32-kernel chain's temps all at once, as before


def test_a_chain_runs_to_the_same_values() -> None:
    program = parse_program(_chain(8))
    x = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    want = x + np.float32(1)
    for _ in range(7):
        want = want * np.float32(2)
    np.testing.assert_array_equal(execute_program(program, {"x": x})["y"], want - np.float32(1))
