"""Parser: expression precedence, statements, declarations and spans."""

from __future__ import annotations

import math

import pytest

from solar.diagnostics import IRSyntaxError
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
    parse_expr,
    parse_program,
)

i, j, k = Name("i"), Name("j"), Name("k")


def b(op: str, lhs: Expr, rhs: Expr) -> Binary:
    return Binary(op, lhs, rhs)


EXPRESSIONS = [
    ("0", IntLit(0)),
    ("12345678901234567890", IntLit(12345678901234567890)),
    ("1.5", FloatLit(1.5)),
    ("1e-05", FloatLit(1e-05)),
    ("2.5E+3", FloatLit(2500.0)),
    ("inf", FloatLit(math.inf)),
    ("true", BoolLit(True)),
    ("false", BoolLit(False)),
    ("-2", Unary("-", IntLit(2))),
    ("-inf", Unary("-", FloatLit(math.inf))),
    ("- -i", Unary("-", Unary("-", i))),
    ("i + j * k", b("+", i, b("*", j, k))),
    ("(i + j) * k", b("*", b("+", i, j), k)),
    ("i - j - k", b("-", b("-", i, j), k)),
    ("i - (j - k)", b("-", i, b("-", j, k))),
    ("i // 2 % 3", b("%", b("//", i, IntLit(2)), IntLit(3))),
    ("i / j * k", b("*", b("/", i, j), k)),
    ("-i * j", b("*", Unary("-", i), j)),
    ("i * -j", b("*", i, Unary("-", j))),
    ("i < j + 1", b("<", i, b("+", j, IntLit(1)))),
    ("i + 1 >= j", b(">=", b("+", i, IntLit(1)), j)),
    ("i == j and j != k", b("and", b("==", i, j), b("!=", j, k))),
    ("i < j or j <= k and k > i", b("or", b("<", i, j), b("and", b("<=", j, k), b(">", k, i)))),
    ("not i < j", Unary("not", b("<", i, j))),
    ("not not i", Unary("not", Unary("not", i))),
    ("not (i or j)", Unary("not", b("or", i, j))),
    ("(i < j) == (j < k)", b("==", b("<", i, j), b("<", j, k))),
    ("A[i, j + 1]", Access("A", (i, b("+", j, IntLit(1))))),
    ("loss[]", Access("loss", ())),
    ("E[idx[i], j]", Access("E", (Access("idx", (i,)), j))),
    ("exp(A[i])", Call("exp", (Access("A", (i,)),))),
    ("select(i < j, 1.0, 0.0)", Call("select", (b("<", i, j), FloatLit(1.0), FloatLit(0.0)))),
    ("max(i, j)", Call("max", (i, j))),
    ("f16(A[i])", Cast(DType.F16, Access("A", (i,)))),
    ("bool(i)", Cast(DType.BOOL, i)),
    ("i64(i) * 2", b("*", Cast(DType.I64, i), IntLit(2))),
    ("maxv", Name("maxv")),
    ("  i   +\n j # comment\n", b("+", i, j)),
]


@pytest.mark.parametrize(("text", "expected"), EXPRESSIONS, ids=[e[0] for e in EXPRESSIONS])
def test_parse_expr(text: str, expected: Expr) -> None:
    assert parse_expr(text) == expected


def test_nan_literal() -> None:
    value = parse_expr("nan")
    assert isinstance(value, FloatLit)
    assert math.isnan(value.value)
    assert value == FloatLit(math.nan)


PROGRAM = """# leading comment
solar-ir 1
program linear_gelu

size M = 128
size K = 64
size Ho = (M - 3) // 2 + 1

input X : f32[M, K]
param W : bf16[K]
temp H : f32[M]
output loss : f64[]

kernel linear {  # trailing comment
  local acc : f32[M]
  for m in 0 .. M {
    acc[m] = 0.0
    for k in 0 .. K step 2 {
      acc[m] += X[m, k] * f32(W[k])
      acc[m] max= X[m, k]
      acc[m] min= X[m, k]
      acc[m] *= 1.0
    }
    H[m] = acc[m]
  }
}

kernel total {
  loss[] = 0.0
  seq for m in 1 .. M {
    if m < Ho and H[m] > 0.0 {
      loss[] += f64(H[m])
    }
  }
}
"""


def test_parse_program_structure() -> None:
    p = parse_program(PROGRAM, filename="lg.alir")
    assert (p.name, p.version) == ("linear_gelu", 1)
    assert [(s.name, s.value) for s in p.sizes][:2] == [("M", IntLit(128)), ("K", IntLit(64))]
    assert p.sizes[2].value == parse_expr("(M - 3) // 2 + 1")
    assert [(t.name, t.role, t.dtype, len(t.shape)) for t in p.tensors] == [
        ("X", "input", DType.F32, 2),
        ("W", "param", DType.BF16, 1),
        ("H", "temp", DType.F32, 1),
        ("loss", "output", DType.F64, 0),
    ]
    linear, total = p.kernels
    assert linear.name == "linear"
    assert [(d.name, d.role) for d in linear.locals] == [("acc", "local")]
    (outer,) = linear.body
    assert isinstance(outer, For)
    assert (outer.var, outer.lo, outer.hi, outer.step, outer.seq) == (
        "m",
        IntLit(0),
        Name("M"),
        1,
        False,
    )
    inner = outer.body[1]
    assert isinstance(inner, For)
    assert inner.step == 2
    assert [s.op for s in inner.body if isinstance(s, Reduce)] == ["+", "max", "min", "*"]
    assert isinstance(outer.body[2], Assign)
    seq = total.body[1]
    assert isinstance(seq, For)
    assert seq.seq
    assert isinstance(seq.body[0], If)
    assert p.tensor("acc").role == "local"
    assert [t.name for t in p.tensors_with_role("input", "param")] == ["X", "W"]


def test_spans_point_into_source() -> None:
    p = parse_program(PROGRAM, filename="lg.alir")
    outer = p.kernels[0].body[0]
    assert isinstance(outer, For)
    assert outer.span is not None
    assert (outer.span.line, outer.span.col) == (16, 3)
    assert str(outer.span) == "lg.alir:16:3"
    reduce = outer.body[1].body[0]  # type: ignore[union-attr]
    assert isinstance(reduce, Reduce)
    assert reduce.target.span is not None
    assert (reduce.target.span.line, reduce.target.span.col) == (19, 7)
    text = PROGRAM[reduce.span.start : reduce.span.end]  # type: ignore[union-attr]
    assert text == "acc[m] += X[m, k] * f32(W[k])"


def test_spans_do_not_affect_equality() -> None:
    a = parse_program(PROGRAM)
    b_ = parse_program("\n\n" + PROGRAM.replace("  ", "    "))
    assert a == b_
    assert a.kernels[0].span != b_.kernels[0].span


def test_reduce_operator_lexes_as_one_token() -> None:
    p = parse_program("solar-ir 1\nprogram p\nkernel k {\n  maxv[] max= max(maxv[], 1.0)\n}\n")
    (stmt,) = p.kernels[0].body
    assert isinstance(stmt, Reduce)
    assert stmt.op == "max"
    assert stmt.target == Access("maxv", ())
    assert stmt.value == Call("max", (Access("maxv", ()), FloatLit(1.0)))


def test_empty_program_parts() -> None:
    p = parse_program("solar-ir 1 program empty kernel k { }")
    assert (p.sizes, p.tensors, p.kernels[0].body) == ((), (), ())


def test_parse_expr_rejects_statements() -> None:
    with pytest.raises(IRSyntaxError):
        parse_expr("A[i] = 1")


def test_huge_text_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    import solar.ir.parser as parser_module

    monkeypatch.setattr(parser_module, "MAX_IR_BYTES", 10)
    with pytest.raises(IRSyntaxError) as info:
        parse_program("solar-ir 1\nprogram p\n")
    assert info.value.code == "E0106"
