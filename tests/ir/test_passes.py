"""Program passes the bounds run on: which copies `forward_copies` reads through (Note [Copies])."""

from __future__ import annotations

import numpy as np
import pytest

from solar.ir import eliminate_dead_code, forward_copies, parse_program, print_program
from solar.validate import execute_program

# X: f32[4, 6]; T is the copy; Y reads part of T. {copy} is the copy kernel's statement.
PROGRAM = """solar-ir 1
program p
input X : f32[4, 6]
temp T : {t_type}
output Y : f32[{y_shape}]
kernel copy {{ {copy} }}
{extra}
kernel use {{ {use} }}
"""

# name: (T's type, copy statement, Y's shape, reader, extra kernel, read through?)
CASES: dict[str, tuple[str, str, str, str, str, bool]] = {
    "transpose": ("f32[6, 4]", "for i in 0 .. 6 { for j in 0 .. 4 { T[i, j] = X[j, i] } }",
                  "6, 2", "for i in 0 .. 6 { for j in 0 .. 2 { Y[i, j] = T[i, 2 * j] } }",
                  "", True),
    "broadcast": ("f32[3, 4, 6]",
                  "for b in 0 .. 3 { for i in 0 .. 4 { for j in 0 .. 6 {"
                  " T[b, i, j] = X[i, j] } } }",
                  "4, 6", "for i in 0 .. 4 { for j in 0 .. 6 { Y[i, j] = T[2, i, j] + 1.0 } }",
                  "", True),
    "offset_slice": ("f32[2, 6]", "for i in 0 .. 2 { for j in 0 .. 6 { T[i, j] = X[i + 2, j] } }",
                     "2, 6", "for i in 0 .. 2 { for j in 0 .. 6 { Y[i, j] = T[i, j] * 2.0 } }",
                     "", True),
    # composing a reader's subscripts into X[i * 6 + j]-style maps nests // and %: kept
    "reshape": ("f32[24]", "for i in 0 .. 24 { T[i] = X[i // 6, i % 6] }",
                "4, 6", "for i in 0 .. 4 { for j in 0 .. 6 { Y[i, j] = T[i * 6 + j] } }",
                "", False),
    "strided": ("f32[2, 6]", "for i in 0 .. 2 { for j in 0 .. 6 { T[i, j] = X[2 * i, j] } }",
                "2, 6", "for i in 0 .. 2 { for j in 0 .. 6 { Y[i, j] = T[i, j] } }", "", False),
    "a_cast": ("f64[4, 6]", "for i in 0 .. 4 { for j in 0 .. 6 { T[i, j] = f64(X[i, j]) } }",
               "4, 6", "for i in 0 .. 4 { for j in 0 .. 6 { Y[i, j] = f32(T[i, j]) } }",
               "", False),
    "part_of_T": ("f32[4, 6]", "for i in 0 .. 2 { for j in 0 .. 6 { T[i, j] = X[i, j] } }",
                  "2, 6", "for i in 0 .. 2 { for j in 0 .. 6 { Y[i, j] = T[i, j] } }", "", False),
    "T_written_again": ("f32[4, 6]",
                        "for i in 0 .. 4 { for j in 0 .. 6 { T[i, j] = X[i, j] } }", "4, 6",
                        "for i in 0 .. 4 { for j in 0 .. 6 { Y[i, j] = T[i, j] } }",
                        "kernel again { T[0, 0] = 1.0 }", False),
}


def _program(case: str) -> str:
    t_type, copy, y_shape, use, extra, _ = CASES[case]
    return PROGRAM.format(t_type=t_type, copy=copy, y_shape=y_shape, use=use, extra=extra)


@pytest.mark.parametrize("case", list(CASES))
def test_which_copies_are_read_through(case: str) -> None:
    program = parse_program(_program(case))
    through = eliminate_dead_code(forward_copies(program))
    forwarded = "kernel copy" not in print_program(through)
    assert forwarded == CASES[case][-1]
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    want, got = execute_program(program, {"X": x}), execute_program(through, {"X": x})
    np.testing.assert_array_equal(got["Y"], want["Y"])
