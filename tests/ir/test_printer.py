"""Printer: minimal parentheses, literal spelling, canonical layout and sample goldens."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Protocol

import pytest

from solar.ir import (
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    DType,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Name,
    Reduce,
    Unary,
    lit,
    parse_program,
    print_expr,
    print_program,
    print_stmt,
)

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "ir").glob("*.alir"))

i, j, k = Name("i"), Name("j"), Name("k")


class Golden(Protocol):
    """The ``golden`` fixture of tests/conftest.py."""

    def check(self, relpath: str, text: str) -> None: ...


def b(op: str, lhs: Expr, rhs: Expr) -> Binary:
    return Binary(op, lhs, rhs)


PRINTED = [
    (IntLit(7), "7"),
    (lit(-3), "-3"),
    (FloatLit(1.0), "1.0"),
    (FloatLit(1e-05), "1e-05"),
    (FloatLit(1e16), "1e+16"),
    (FloatLit(0.1), "0.1"),
    (FloatLit(math.inf), "inf"),
    (FloatLit(math.nan), "nan"),
    (lit(-0.5), "-0.5"),
    (BoolLit(True), "true"),
    (b("+", i, b("*", j, k)), "i + j * k"),
    (b("*", b("+", i, j), k), "(i + j) * k"),
    (b("-", i, b("-", j, k)), "i - (j - k)"),
    (b("-", b("-", i, j), k), "i - j - k"),
    (b("/", i, b("*", j, k)), "i / (j * k)"),
    (b("//", b("%", i, j), k), "i % j // k"),
    (b("*", Unary("-", i), j), "-i * j"),
    (Unary("-", b("+", i, j)), "-(i + j)"),
    (Unary("-", Unary("-", i)), "-(-i)"),
    (Unary("-", IntLit(2)), "-2"),
    (b("<", b("<", i, j), k), "(i < j) < k"),
    (b("<", i, b("+", j, IntLit(1))), "i < j + 1"),
    (b("and", b("or", i, j), k), "(i or j) and k"),
    (b("or", i, b("and", j, k)), "i or j and k"),
    (b("or", b("or", i, j), k), "i or j or k"),
    (b("or", i, b("or", j, k)), "i or (j or k)"),
    (Unary("not", b("and", i, j)), "not (i and j)"),
    (Unary("not", b("==", i, j)), "not i == j"),
    (b("==", Unary("not", i), j), "(not i) == j"),
    (b("+", Unary("not", i), j), "(not i) + j"),
    (Access("A", (i, b("+", j, IntLit(1)))), "A[i, j + 1]"),
    (Access("loss", ()), "loss[]"),
    (Call("select", (b("<", i, j), FloatLit(1.0), lit(-1.0))), "select(i < j, 1.0, -1.0)"),
    (Cast(DType.BF16, b("+", i, j)), "bf16(i + j)"),
    (b("*", Cast(DType.F32, i), FloatLit(2.0)), "f32(i) * 2.0"),
]


@pytest.mark.parametrize(("expr", "text"), PRINTED, ids=[t for _, t in PRINTED])
def test_print_expr(expr: Expr, text: str) -> None:
    assert print_expr(expr) == text


def test_print_stmt_layout() -> None:
    body = (
        Assign(Access("Y", (i,)), FloatLit(0.0)),
        If(b("<", i, Name("N")), (Reduce(Access("Y", (i,)), "max", Access("X", (i, j))),)),
    )
    loop = For("i", IntLit(0), Name("N"), (For("j", IntLit(1), Name("M"), body, step=2, seq=True),))
    assert print_stmt(loop, 1) == (
        "  for i in 0 .. N {\n"
        "    seq for j in 1 .. M step 2 {\n"
        "      Y[i] = 0.0\n"
        "      if i < N {\n"
        "        Y[i] max= X[i, j]\n"
        "      }\n"
        "    }\n"
        "  }"
    )


CANONICAL = """solar-ir 1
program linear_gelu

size M = 128
size N = 256
size Ho = (M - 3) // 2 + 1

input X : f32[M, N]
output loss : f32[]

kernel linear {
  local acc : f32[M]
  for m in 0 .. M {
    acc[m] = 0.0
    for n in 0 .. N {
      acc[m] += X[m, n] * X[m, n]
    }
  }
  loss[] = 0.0
  for m in 0 .. M {
    loss[] += acc[m]
  }
}

kernel empty {
}
"""


def test_print_program_is_canonical() -> None:
    messy = (
        "# comment\nsolar-ir 1 program linear_gelu size M = 128 size N = (256) "
        "size Ho = ((M - 3) // 2) + 1\ninput X:f32[M,N] output loss : f32[ ]\n"
        "kernel linear { local acc : f32[M]\n for m in 0..M { acc[m] = 0.0 for n in 0 .. N {"
        " acc[m] += (X[m, n] * X[m, n]) } } loss[] = 0.0 for m in 0 .. M { loss[] += acc[m] } }"
        " kernel empty {}"
    )
    assert print_program(parse_program(messy)) == CANONICAL
    assert print_program(parse_program(CANONICAL)) == CANONICAL


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_golden(path: Path, golden: Golden) -> None:
    printed = print_program(parse_program(path.read_text(encoding="utf-8"), filename=str(path)))
    golden.check(f"ir/{path.stem}.alir", printed)
    assert print_program(parse_program(printed)) == printed
