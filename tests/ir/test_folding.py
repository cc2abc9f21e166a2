"""Literal folding (solar.ir.folding): integer literals, min/max and scalar locals."""

from __future__ import annotations

import operator
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from solar.ir import Binary, BoolLit, Call, IntLit, lit, parse_program, print_program
from solar.ir.folding import fold, inline_literal_scalars

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne, "+": operator.add, "-": operator.sub,
        "*": operator.mul}


@given(st.sampled_from(sorted(_OPS)), st.integers(0, 2**40), st.integers(0, 2**40))
def test_integer_literals_fold_to_their_value(op: str, a: int, b: int) -> None:
    out = fold(Binary(op, IntLit(a), IntLit(b)))
    want = _OPS[op](a, b)
    assert out == (BoolLit(want) if isinstance(want, bool) else lit(want))


@given(st.integers(0, 99), st.integers(0, 99))
def test_min_max_of_literals(a: int, b: int) -> None:
    assert fold(Call("min", (IntLit(a), IntLit(b)))) == IntLit(min(a, b))
    assert fold(Call("max", (IntLit(a), IntLit(b)))) == IntLit(max(a, b))


SCATTER = """solar-ir 1
program s
input x : f32[16, 8]
input v : f32[8]
output y : f32[16, 8]
kernel scatter {
  local start : i64[]
  local inb : bool[]
  start[] = min(max(%s, 0), 15)
  inb[] = 0 <= %s and %s <= 15
  for u in 0 .. 8 {
    y[start[], u] = select(inb[], v[u], x[start[], u])
  }
}
"""

# literal index: the write it becomes, by hand
ROWS = {"5": "y[5, u] = v[u]", "0": "y[0, u] = v[u]", "15": "y[15, u] = v[u]",
        "20": "y[15, u] = x[15, u]"}


def test_a_scalar_local_of_literals_is_inlined() -> None:
    for idx, want in ROWS.items():
        p = parse_program(SCATTER % (idx, idx, idx))
        out = inline_literal_scalars(p.kernels[0], lambda _: 1)
        text = print_program(replace(p, kernels=(out,)))
        assert want in text, (idx, text)
