"""In-place kernels (Note [In-place updates]): grammar, printer roundtrip, rules (E0225),
execution, and what the lift charges for them."""

from __future__ import annotations

import numpy as np
import pytest

from solar.bounds import evaluate_costs
from solar.diagnostics import IRVerifyError
from solar.einsum import lift_to_einsum
from solar.ir import parse_program, print_program, verify_program
from solar.validate import execute_program

HEAD = """solar-ir 1
program upd
input X : f32[8, 4]
input V : f32[4]
{decls}
"""
COPY = """inplace kernel xv {
  for i in 0 .. 8 { for j in 0 .. 4 { Y[i, j] = X[i, j] } }
}
"""
ROW = """kernel row {
  for j in 0 .. 4 { Y[5, j] = V[j] }
}
"""
VALID = HEAD.format(decls="output Y : f32[8, 4]") + COPY + ROW


def test_an_inplace_kernel_roundtrips_runs_and_is_free() -> None:
    p = parse_program(VALID)
    verify_program(p)
    assert parse_program(print_program(p)) == p
    assert "inplace kernel xv {" in print_program(p)
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    v = -np.ones(4, dtype=np.float32)
    want = x.copy()
    want[5] = v
    np.testing.assert_array_equal(execute_program(p, {"X": x, "V": v})["Y"], want)
    c = evaluate_costs(lift_to_einsum(p))
    # read V, write row 5: the copy is the storage itself
    assert float(c.read_bytes.sum() + c.written_bytes.sum()) == 2 * 4 * 4
    assert float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()) == 2 * 4 * 4


BAD = [
    ("computes", VALID.replace("Y[i, j] = X[i, j]", "Y[i, j] = X[i, j] * 2.0"),
     "only loops and whole copies"),
    ("partial", VALID.replace("for i in 0 .. 8 { for j in 0 .. 4 { Y[i, j]",
                              "for i in 0 .. 7 { for j in 0 .. 4 { Y[i, j]"), "whole tensor"),
    ("reversed", VALID.replace("Y[i, j] = X[i, j]", "Y[i, j] = X[i, 3 - j]"), "whole tensor"),
    ("from_temp", HEAD.format(decls="temp T : f32[8, 4]\noutput Y : f32[8, 4]")
     + "kernel t { for i in 0 .. 8 { for j in 0 .. 4 { T[i, j] = X[i, j] } } }\n"
     + COPY.replace("X[i, j]", "T[i, j]") + ROW, "input or parameter"),
    ("dtype", VALID.replace("output Y : f32[8, 4]", "output Y : f64[8, 4]"), "dtype and shape"),
    ("source_used_later", VALID + "kernel later { for j in 0 .. 4 { Z[j] = X[0, j] } }\n",
     "uses `X` after inplace kernel `xv`"),
    ("destination_used_before", HEAD.format(decls="output Y : f32[8, 4]")
     + "kernel early { for j in 0 .. 4 { Y[0, j] = V[j] } }\n" + COPY + ROW,
     "uses `Y` before inplace kernel `xv`"),
    ("locals", VALID.replace("inplace kernel xv {\n", "inplace kernel xv {\n  local L : f32[4]\n"),
     "declares locals"),
]


@pytest.mark.parametrize(("name", "text", "needle"), BAD, ids=[b[0] for b in BAD])
def test_inplace_kernel_rules(name: str, text: str, needle: str) -> None:
    if "Z[j]" in text:
        text = text.replace("output Y : f32[8, 4]", "output Y : f32[8, 4]\noutput Z : f32[4]")
    with pytest.raises(IRVerifyError) as info:
        verify_program(parse_program(text))
    assert info.value.code == "E0225", info.value.render()
    assert needle in info.value.message, info.value.render()
