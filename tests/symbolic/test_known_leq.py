"""`is_known_leq` answers what a full ``sympy.simplify`` proof attempt answers; its
counterexample check only spares the attempt (and ``sympy.physics``'s import) where
no proof can exist (issue 17, start-up)."""

from __future__ import annotations

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.symbolic import ceiling, index_symbol, is_known_leq, size_symbol

S, T = size_symbol("S"), size_symbol("T")
IDX = index_symbol("i")

_ATOMS = (S, T, IDX, sympy.Integer(0), sympy.Integer(1), sympy.Integer(2), sympy.Integer(3))


def _reference(a: object, b: object) -> bool:
    return bool(sympy.simplify(sympy.sympify(b) - sympy.sympify(a)).is_nonnegative)


def _expr(draw: st.DrawFn, depth: int = 0) -> sympy.Expr:
    if depth >= 3 or draw(st.booleans()):
        return draw(st.sampled_from(_ATOMS))
    op = draw(st.sampled_from(["+", "-", "*", "floor", "ceil", "min", "max"]))
    a, b = _expr(draw, depth + 1), _expr(draw, depth + 1)
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "floor":
            return sympy.floor(a / 2)
        case "ceil":
            return ceiling(a / 3)
        case "min":
            return sympy.Min(a, b)
        case _:
            return sympy.Max(a, b)


exprs = st.composite(_expr)


@settings(max_examples=150, deadline=None)
@given(exprs(), exprs())
def test_is_known_leq_agrees_with_the_proof_attempt(a: sympy.Expr, b: sympy.Expr) -> None:
    assert is_known_leq(a, b) == _reference(a, b)


def test_table() -> None:
    cases = [
        (0, 2 - sympy.floor(S / 2), False),  # negative for large S
        (0, S - 1, True),
        (S, 2 * S, True),
        (IDX, S, False),  # an index is not bounded by a size
        (1, S, True),
        (0, IDX, True),
        (2, S, False),  # S = 1
        (S * T, S * T + 1, True),
    ]
    for a, b, want in cases:
        assert is_known_leq(a, b) is want, (a, b)
        assert _reference(a, b) is want, (a, b)
