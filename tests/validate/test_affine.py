"""The executor's view of index expressions: linear forms, free names, interval bounds."""

from __future__ import annotations

import doctest

import pytest

import solar.validate.affine
from solar.ir import Lin, linear_form, parse_expr
from solar.validate.affine import free_names, reads_tensor


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i + 1", Lin((("i", 1),), 1)),
        ("2 * (i - N) + j", Lin((("i", 2), ("j", 1)), -16)),
        ("N * i - i", Lin((("i", 7),), 0)),
        ("-(i - j)", Lin((("i", -1), ("j", 1)), 0)),
        ("0 * i + 3", Lin((), 3)),
        ("(N + 1) // 2 - M % 3", Lin((), 3)),
        ("min(N, M) + i", Lin((("i", 1),), 4)),
        # Without `loop_vars`, every name that is not a size is a loop variable.
        ("unknown", Lin((("unknown", 1),), 0)),
        ("N", Lin((), 8)),
        ("i * j", None),
        ("i // 2", None),
        ("N // 0", None),
        ("max(i, 1)", None),
        ("X[i]", None),
    ],
)
def test_linear_form_without_loop_vars(text: str, expected: Lin | None) -> None:
    assert linear_form(parse_expr(text), {"N": 8, "M": 4}) == expected


def test_free_names_and_reads_tensor() -> None:
    expr = parse_expr("float32(A[i + N, B[j]]) * -k")
    assert free_names(expr) == frozenset({"i", "N", "j", "k"})
    assert reads_tensor(expr)
    assert reads_tensor(expr, "B")
    assert not reads_tensor(expr, "C")
    assert not reads_tensor(parse_expr("i + min(N, 2)"))


def test_affine_doctests() -> None:
    assert doctest.testmod(solar.validate.affine).failed == 0
