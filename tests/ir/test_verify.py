"""verify_program on valid programs: what it accepts and the facts it returns."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest
from hypothesis import given

import solar.ir.affine
from solar.diagnostics import IRVerifyError
from solar.ir import (
    Access,
    Assign,
    Binary,
    DType,
    Expr,
    For,
    IntLit,
    Kernel,
    Lin,
    Name,
    Program,
    SizeDecl,
    TensorDecl,
    collect_errors,
    linear_form,
    parse_expr,
    parse_program,
    print_program,
    resolve_sizes,
    verify_program,
)

from .strategies import programs, valid_programs

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "ir").glob("*.alir"))

HEADER = """solar-ir 1
program ok

size N = 8
size M = 4
size Ho = (N - 3) // 2 + 1

input X : f32[N]
input I : i64[N]
param W : f32[N, M]
temp T : f32[N]
output Y : f32[N]
"""


def kernel(body: str, decls: str = "") -> str:
    """A program whose one kernel writes Y, then runs ``body``."""
    return (
        HEADER + decls + "\nkernel k {\n  for i in 0 .. N {\n    Y[i] = X[i]\n  }\n" + body + "}\n"
    )


ACCEPTED = [
    ("guard_protects_shift", "for i in 0 .. N {\n if i + 1 < N {\n T[i] = X[i + 1]\n }\n}"),
    ("guard_protects_negative", "for i in 0 .. N {\n if 0 <= i - 1 {\n T[i] = X[i - 1]\n }\n}"),
    ("triangular", "for i in 0 .. N {\n for j in 0 .. i + 1 {\n T[j] = X[i - j]\n }\n}"),
    ("triangular_upper", "for i in 0 .. N {\n for j in i .. N {\n T[j - i] = X[j]\n }\n}"),
    ("step_aligned", "for i in 0 .. N step 2 {\n T[i] = X[i]\n T[i + 1] = X[i + 1]\n}"),
    (
        "flattened_with_size",
        "for i in 0 .. 2 {\n for j in 0 .. M {\n T[i * M + j] = X[j * 2]\n }\n}",
    ),
    ("floor_div_and_mod", "for i in 0 .. N {\n T[i // 2] = X[i % 2]\n}"),
    ("div_by_size", "for i in 0 .. N {\n T[i // M] = X[i]\n}"),
    ("clamp_with_min", "for i in 0 .. N {\n T[i] = X[min(i + 1, N - 1)] + X[max(i - 1, 0)]\n}"),
    ("derived_size_bound", "for i in 0 .. Ho {\n T[2 * i + 2] = X[2 * i]\n}"),
    ("empty_range_not_checked", "for i in N .. N {\n T[i + 100] = X[i]\n}"),
    ("seq_recurrence", "T[0] = X[0]\nseq for i in 1 .. N {\n T[i] = T[i - 1] + X[i]\n}"),
    ("same_statement_reads_ahead", "for i in 0 .. N - 1 {\n T[i] = T[i + 1]\n}"),
    (
        "write_then_read_behind",
        "for i in 0 .. N {\n T[i] = X[i]\n}\nfor i in 1 .. N {\n"
        " Y[i] = X[i]\n T[i] = Y[i] + Y[i - 1]\n}",
    ),
    (
        "inner_seq",
        "for m in 0 .. M {\n W2[0, m] = 0.0\n seq for i in 1 .. N {\n"
        " W2[i, m] = W2[i - 1, m] + X[i]\n }\n}",
    ),
    (
        "sibling_loops_reuse_names",
        "for j in 0 .. M {\n T[j] = X[j]\n}\nfor j in 0 .. N {\n T[j] = 0.0\n}",
    ),
    ("casts", "for i in 0 .. N {\n J[i] = i64(X[i])\n B[i] = X[i] > 0.0\n T[i] = f32(J[i]) + i\n}"),
    (
        "select_and_isnan",
        "for i in 0 .. N {\n T[i] = select(isnan(X[i]) or X[i] < 0.0, 0.0, X[i])\n}",
    ),
    (
        "int_reductions",
        "for i in 0 .. N {\n J[i] = 0\n J[i] max= I[i]\n J[i] min= i\n J[i] *= 2\n}",
    ),
    ("bool_logic", "for i in 0 .. N {\n B[i] = not (X[i] > 0.0 and i < 3) or true\n}"),
    ("rank0", "L[] = 0.0\nfor i in 0 .. N {\n L[] += X[i] * X[i]\n}"),
    ("value_dependent_if", "for i in 0 .. N {\n if X[i] > 0.0 {\n T[i] = X[i]\n }\n}"),
    ("gather", "for i in 0 .. N {\n T[i] = X[I[i]]\n}"),
    ("gather_2d", "for i in 0 .. N {\n for m in 0 .. M {\n W2[i, m] = W[I[i] % N, m]\n }\n}"),
    ("float_mod_and_floordiv", "for i in 0 .. N {\n T[i] = X[i] % 2.0 + X[i] // 0.5\n}"),
    ("loop_var_in_value", "for i in 0 .. N {\n for j in 0 .. N {\n T[i] = f32(i * j)\n }\n}"),
    ("products_in_guard", "for i in 0 .. N {\n if i * i < N {\n T[i] = X[i]\n }\n}"),
]
DECLS = "temp J : i64[N]\ntemp B : bool[N]\ntemp W2 : f32[N, M]\noutput L : f32[]\n"


def _accepted(body: str) -> str:
    indented = "".join(f"  {line}\n" for line in body.split("\n"))
    text = kernel(indented, DECLS)
    # every declared output must be written
    return text.replace(
        "  for i in 0 .. N {\n    Y[i] = X[i]", "  L[] = 0.0\n  for i in 0 .. N {\n    Y[i] = X[i]"
    )


@pytest.mark.parametrize(("name", "body"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted(name: str, body: str) -> None:
    program = parse_program(_accepted(body), filename=f"{name}.alir")
    info = verify_program(program)
    assert info.sizes == {"N": 8, "M": 4, "Ho": 3}
    assert collect_errors(program) == []


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_samples_verify(path: Path) -> None:
    program = parse_program(path.read_text(encoding="utf-8"), filename=str(path))
    info = verify_program(program)
    assert info.sizes == resolve_sizes(program)
    outputs = {t.name for t in program.tensors_with_role("output")}
    assert outputs <= set(info.writers)


def test_info_records_gathers_and_value_dependent_ifs() -> None:
    body = (
        "  for i in 0 .. N {\n    T[i] = X[I[i]] + X[i]\n"
        "    if X[i] > 0.0 {\n      T[i] = 1.0\n    }\n"
        "    if i < 3 {\n      T[i] = 2.0\n    }\n  }\n"
    )
    program = parse_program(kernel(body))
    info = verify_program(program)
    assert [a.tensor for a in info.indirect_accesses] == ["X"]
    assert info.indirect_accesses[0].indices == (parse_expr("I[i]"),)
    assert len(info.value_dependent_ifs) == 1
    assert info.value_dependent_ifs[0].cond == parse_expr("X[i] > 0.0")


def test_info_writers_in_launch_order() -> None:
    text = kernel("  for i in 0 .. N {\n    T[i] = Y[i]\n  }\n") + (
        "\nkernel k2 {\n  for i in 0 .. N {\n    Y[i] = T[i] * 2.0\n  }\n}\n"
    )
    info = verify_program(parse_program(text))
    assert info.writers == {"Y": ("k", "k2"), "T": ("k",)}


def test_step_witness_respects_grid() -> None:
    # i in {0, 2, 4, 6, 8} for N = 9: T[i + 1] reaches 9, outside T's 9 elements
    text = HEADER.replace("size N = 8", "size N = 9")
    body = "  for i in 0 .. N step 2 {\n    T[i + 1] = X[i]\n  }\n"
    with pytest.raises(IRVerifyError, match=r"reaches 9") as info:
        verify_program(parse_program(kernel(body).replace(HEADER, text)))
    assert info.value.code == "E0216"
    assert "i = 8" in info.value.notes[0]


def test_programmatic_program_errors_have_no_span() -> None:
    decl = TensorDecl("Y", "output", DType.F32, (Name("N"),))
    body = For("i", IntLit(0), Name("N"), (Assign(Access("Y", (Name("i"),)), IntLit(0)),), step=-1)
    program = Program("p", (SizeDecl("N", IntLit(4)),), (decl,), (Kernel("k", (), (body,)),))
    with pytest.raises(IRVerifyError) as info:
        verify_program(program)
    assert (info.value.code, info.value.span) == ("E0208", None)


def test_misplaced_local_role() -> None:
    decl = TensorDecl("Y", "local", DType.F32, ())
    program = Program("p", (), (decl,), ())
    assert [e.code for e in collect_errors(program)] == ["E0215"]


def test_too_deep_expression_is_a_verify_error() -> None:
    value: Expr = IntLit(1)
    for _ in range(5000):
        value = Binary("+", value, IntLit(1))
    decl = TensorDecl("Y", "output", DType.I64, ())
    program = Program("p", (), (decl,), (Kernel("k", (), (Assign(Access("Y", ()), value),)),))
    with pytest.raises(IRVerifyError) as info:
        verify_program(program)
    assert info.value.code == "E0223"


@given(valid_programs())
def test_random_valid_programs_verify(program: Program) -> None:
    info = verify_program(program)
    assert collect_errors(program) == []
    assert verify_program(parse_program(print_program(program))) == info


@given(programs)
def test_arbitrary_programs_fail_cleanly(program: Program) -> None:
    errors = collect_errors(program)
    raised: IRVerifyError | None = None
    try:
        verify_program(program)
    except IRVerifyError as err:
        raised = err
    if raised is None:
        assert errors == []
    else:
        assert (errors[0].code, errors[0].message) == (raised.code, raised.message)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("i + 1", Lin((("i", 1),), 1)),
        ("2 * (i - N) + j", Lin((("i", 2), ("j", 1)), -16)),
        ("N * i - i", Lin((("i", 7),), 0)),
        ("(N + 1) // 2 - M % 3", Lin((), 3)),
        ("min(N, M) + i", Lin((("i", 1),), 4)),
        ("i * j", None),
        ("i // 2", None),
        ("X[i]", None),
        ("unknown", None),
    ],
)
def test_linear_form(text: str, expected: Lin | None) -> None:
    assert linear_form(parse_expr(text), {"N": 8, "M": 4}, loop_vars={"i", "j"}) == expected


def test_linear_form_loop_var_shadows_size() -> None:
    # The verifier's view: a declared loop variable wins over a size of the same name.
    assert linear_form(parse_expr("N + 1"), {"N": 8}, loop_vars={"N"}) == Lin((("N", 1),), 1)


def test_affine_doctests() -> None:
    assert doctest.testmod(solar.ir.affine).failed == 0
