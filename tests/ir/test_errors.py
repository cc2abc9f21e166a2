"""Error table: bad programs and the exact diagnostic (code, line, column, message) each gets."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from solar.diagnostics import IRSyntaxError, IRVerifyError, SolarError, render_diagnostic
from solar.ir import collect_errors, parse_program, verify_program

HEADER = """solar-ir 1
program p

size N = 8
size M = 4

input X : f32[N]
input I : i64[N]
param W : f32[N, M]
temp T : f32[N]
output Y : f32[N]
"""
# Kernel bodies start on line 14 (`kernel k {` is line 13).


def kernel(body: str, decls: str = "") -> str:
    """HEADER + one kernel ``k`` with ``body``; ``decls`` go after the header's tensors."""
    return HEADER + decls + "\nkernel k {\n" + body + "}\n"


def in_loop(stmt: str) -> str:
    """``stmt`` inside ``for i in 0 .. N`` on line 15 (column 5), plus a valid write of Y."""
    return kernel(
        "  for i in 0 .. N {\n    " + stmt + "\n  }\n  for i in 0 .. N {\n    Y[i] = X[i]\n  }\n"
    )


def loop(*lines: str) -> str:
    """A kernel whose body is ``lines`` (already indented); line 14 is the first."""
    return kernel("".join(f"{line}\n" for line in lines))


VALID_KERNEL = "  for i in 0 .. N {\n    Y[i] = X[i]\n  }\n"

# (id, text, code, line, col, message substring)
SYNTAX_CASES = [
    (
        "unbalanced_paren",
        loop("  for i in 0 .. N {", "    Y[i] = (X[i]", "  }"),
        "E0104",
        16,
        3,
        "unbalanced `}`: expected `)`",
    ),
    ("missing_bracket", in_loop("Y[i = X[i]"), "E0104", 16, 3, "expected `]`"),
    ("dangling_operator", in_loop("Y[i] = X[i] *"), "E0102", 16, 3, "unexpected `}`"),
    ("bad_character", in_loop("Y[i] = X[i] $ 2.0"), "E0101", 15, 17, "unexpected character `$`"),
    (
        "truncated_body",
        HEADER + "\nkernel k {\n  for i in 0 .. N {\n    Y[i] = X[i] + ",
        "E0104",
        14,
        19,
        "unclosed `{`",
    ),
    ("truncated_size", "solar-ir 1\nprogram p\nsize N =", "E0103", 3, 8, "unexpected end of input"),
    (
        "bad_dtype",
        HEADER.replace("f32[N]\ninput I", "f31[N]\ninput I"),
        "E0102",
        7,
        11,
        "unexpected `f31`",
    ),
    ("missing_version", "program p\nsize N = 8\n", "E0102", 1, 1, "expected `solar-ir`"),
    (
        "chained_comparison",
        in_loop("if 0 < i < 3 {\n      Y[i] = X[i]\n    }"),
        "E0102",
        15,
        14,
        "unexpected `<`",
    ),
    ("float_without_fraction", in_loop("Y[i] = 1.e5"), "E0101", 15, 13, "unexpected character `.`"),
    ("float_overflow", in_loop("Y[i] = 1e999"), "E0105", 15, 12, "overflows; write `inf`"),
    (
        "negative_step",
        loop("  for i in 0 .. N step -1 {", "    Y[i] = X[i]", "  }"),
        "E0102",
        14,
        24,
        "expected an integer",
    ),
    ("unknown_reduce_op", in_loop("Y[i] -= X[i]"), "E0102", 15, 10, "`max=` or `min=`"),
    (
        "size_after_tensor",
        "solar-ir 1\nprogram p\ninput X : f32[4]\nsize N = 8\n",
        "E0102",
        4,
        1,
        "unexpected `size`",
    ),
    ("statement_outside_kernel", HEADER + "Y[0] = 1.0\n", "E0102", 12, 1, "unexpected `Y`"),
    ("empty_input", "", "E0103", 1, 1, "expected `solar-ir`"),
    ("stray_closing_brace", HEADER + "\nkernel k { }\n}\n", "E0104", 14, 1, "unbalanced `}`"),
    (
        "nested_too_deeply",
        in_loop("Y[i] = " + " + ".join(["X[i]"] * 800)),
        "E0107",
        None,
        None,
        "nested too deeply",
    ),
]

SEMANTIC_CASES = [
    (
        "unsupported_version",
        HEADER.replace("solar-ir 1", "solar-ir 7") + "\nkernel k {\n" + VALID_KERNEL + "}\n",
        "E0201",
        1,
        10,
        "unsupported IR version 7",
    ),
    (
        "duplicate_size",
        HEADER.replace("size M = 4", "size M = 4\nsize N = 3"),
        "E0202",
        6,
        6,
        "size `N` is already declared",
    ),
    (
        "duplicate_tensor",
        HEADER.replace("temp T : f32[N]", "temp X : f32[N]"),
        "E0202",
        10,
        6,
        "tensor `X` is already declared",
    ),
    (
        "tensor_named_like_size",
        HEADER.replace("temp T : f32[N]", "temp M : f32[N]"),
        "E0202",
        10,
        6,
        "tensor `M` is already declared",
    ),
    (
        "local_shadows_tensor",
        kernel(VALID_KERNEL, "").replace("kernel k {\n", "kernel k {\n  local T : f32[N]\n"),
        "E0202",
        14,
        9,
        "tensor `T` is already declared",
    ),
    (
        "duplicate_kernel",
        kernel(VALID_KERNEL) + "\nkernel k {\n" + VALID_KERNEL + "}\n",
        "E0202",
        19,
        8,
        "kernel `k` is already declared",
    ),
    (
        "loop_shadows_loop",
        loop("  for i in 0 .. N {", "    for i in 0 .. M {", "      Y[i] = X[i]", "    }", "  }"),
        "E0202",
        15,
        9,
        "shadows an enclosing loop",
    ),
    (
        "loop_shadows_size",
        loop("  for N in 0 .. 8 {", "    Y[N] = X[N]", "  }"),
        "E0202",
        14,
        7,
        "shadows a size",
    ),
    ("unknown_tensor", in_loop("Y[i] = Z[i]"), "E0203", 15, 12, "unknown tensor `Z`"),
    ("size_used_as_tensor", in_loop("Y[i] = N[i]"), "E0203", 15, 12, "`N` is a size, not a tensor"),
    ("unbound_index", in_loop("Y[i] = X[j]"), "E0204", 15, 14, "`j` is not bound"),
    (
        "index_used_outside_loop",
        loop("  for i in 0 .. N {", "    Y[i] = X[i]", "  }", "  Y[0] = X[i]"),
        "E0204",
        17,
        12,
        "`i` is not bound",
    ),
    ("tensor_used_as_value", in_loop("Y[i] = X"), "E0204", 15, 12, "`X` is not bound"),
    (
        "bound_uses_own_index",
        loop("  for i in 0 .. i {", "    Y[i] = X[i]", "  }"),
        "E0204",
        14,
        17,
        "`i` is not bound",
    ),
    ("rank_mismatch", in_loop("Y[i] = W[i]"), "E0205", 15, 12, "rank 2 but is indexed with 1"),
    (
        "rank0_indexed",
        kernel(VALID_KERNEL + "  L[0] = 1.0\n", "output L : f32[]\n"),
        "E0205",
        18,
        3,
        "rank 0 but is indexed with 1",
    ),
    (
        "product_of_indices",
        loop(
            "  for i in 0 .. N {", "    for j in 0 .. 2 {", "      Y[i * j] = X[i]", "    }", "  }"
        ),
        "E0206",
        16,
        9,
        "`i * j` multiplies two loop indices",
    ),
    (
        "divide_by_index",
        loop(
            "  for i in 0 .. N {", "    for j in 1 .. M {", "      Y[i] = X[i // j]", "    }", "  }"
        ),
        "E0206",
        16,
        21,
        "`//` by `j` depends on a loop index",
    ),
    ("call_in_subscript", in_loop("Y[i] = X[abs(i)]"), "E0206", 15, 14, "not an affine operation"),
    ("modulo_by_zero_size", in_loop("Y[i] = X[i % (N - 8)]"), "E0206", 15, 19, "not positive"),
    (
        "tensor_in_bound",
        loop("  for i in 0 .. I[0] {", "    Y[i] = X[i]", "  }"),
        "E0207",
        14,
        17,
        "must not read tensors",
    ),
    (
        "nonaffine_bound",
        loop(
            "  for i in 0 .. N {", "    for j in 0 .. i * i {", "      Y[i] = X[i]", "    }", "  }"
        ),
        "E0207",
        15,
        19,
        "`i * i` multiplies",
    ),
    (
        "zero_step",
        loop("  for i in 0 .. N step 0 {", "    Y[i] = X[i]", "  }"),
        "E0208",
        14,
        24,
        "positive integer, got 0",
    ),
    (
        "shape_unknown_size",
        HEADER.replace("temp T : f32[N]", "temp T : f32[N, K]"),
        "E0209",
        10,
        17,
        "`K` is not a size",
    ),
    (
        "shape_negative",
        HEADER.replace("temp T : f32[N]", "temp T : f32[M - N]"),
        "E0209",
        10,
        14,
        "is -4 at the default sizes",
    ),
    (
        "shape_float",
        HEADER.replace("temp T : f32[N]", "temp T : f32[2.5]"),
        "E0209",
        10,
        14,
        "not an integer expression of sizes",
    ),
    ("unknown_function", in_loop("Y[i] = gelu(X[i])"), "E0210", 15, 12, "unknown function `gelu`"),
    ("wrong_arity", in_loop("Y[i] = exp(X[i], 2.0)"), "E0210", 15, 12, "takes 1 argument, got 2"),
    ("tensor_called", in_loop("Y[i] = X(i)"), "E0210", 15, 12, "unknown function `X`"),
    ("non_bool_if", in_loop("if i {\n      Y[i] = X[i]\n    }"), "E0211", 15, 8, "must be boolean"),
    (
        "and_on_float",
        in_loop("if X[i] and i < 3 {\n      Y[i] = X[i]\n    }"),
        "E0211",
        15,
        8,
        "operand of `and` must be boolean",
    ),
    (
        "select_float_condition",
        in_loop("Y[i] = select(X[i], 1.0, 0.0)"),
        "E0211",
        15,
        19,
        "condition of `select`",
    ),
    ("float_index", in_loop("Y[i] = X[1.5]"), "E0212", 15, 14, "subscript must be an integer"),
    ("float_tensor_index", in_loop("Y[i] = X[X[i]]"), "E0212", 15, 14, "not float"),
    ("true_division_index", in_loop("Y[i] = X[i / 2]"), "E0212", 15, 14, "not float"),
    (
        "float_bound",
        loop("  for i in 0 .. 2.5 {", "    Y[i] = X[i]", "  }"),
        "E0212",
        14,
        17,
        "loop bound must be an integer",
    ),
    (
        "bool_reduction",
        kernel(
            "  for i in 0 .. N {\n    B[i] = false\n    B[i] max= X[i] > 0.0\n"
            "    Y[i] = X[i]\n  }\n",
            "temp B : bool[N]\n",
        ),
        "E0213",
        17,
        10,
        "`max=` is not defined for bool",
    ),
    (
        "write_input",
        loop("  for i in 0 .. N {", "    X[i] = 1.0", "    Y[i] = X[i]", "  }"),
        "E0214",
        15,
        5,
        "cannot write to input tensor `X`",
    ),
    (
        "write_param",
        loop("  for i in 0 .. N {", "    W[i, 0] = 1.0", "    Y[i] = X[i]", "  }"),
        "E0214",
        15,
        5,
        "cannot write to param tensor `W`",
    ),
    (
        "local_outside_kernel",
        kernel(VALID_KERNEL) + "\nkernel k3 {\n  for i in 0 .. N {\n"
        "    T[i] = acc[i]\n  }\n}\n\nkernel k2 {\n  local acc : f32[N]\n  for i in 0 .. N {\n"
        "    acc[i] = X[i]\n  }\n}\n",
        "E0215",
        21,
        12,
        "`acc` is local to kernel `k2`",
    ),
    (
        "local_of_earlier_kernel",
        HEADER + "\nkernel k {\n  local acc : f32[N]\n  for i in 0 .. N {\n    acc[i] = X[i]\n"
        "    Y[i] = acc[i]\n  }\n}\n\nkernel k2 {\n  for i in 0 .. N {\n    T[i] = acc[i]\n"
        "  }\n}\n",
        "E0215",
        23,
        12,
        "`acc` is local to kernel `k`",
    ),
    (
        "out_of_bounds_high",
        in_loop("Y[i] = X[i + 1]"),
        "E0216",
        15,
        14,
        "reaches 8, outside dimension 0",
    ),
    ("out_of_bounds_low", in_loop("Y[i] = X[i - 1]"), "E0216", 15, 14, "reaches -1"),
    (
        "out_of_bounds_write",
        loop("  for i in 0 .. N {", "    Y[2 * i] = X[i]", "  }"),
        "E0216",
        15,
        7,
        "reaches 14",
    ),
    (
        "out_of_bounds_triangular",
        loop(
            "  for i in 0 .. N {",
            "    Y[i] = X[i]",
            "    for j in 0 .. i + 2 {",
            "      T[j] = X[i]",
            "    }",
            "  }",
        ),
        "E0216",
        17,
        9,
        "reaches 8",
    ),
    (
        "output_never_written",
        HEADER + "\nkernel k {\n  for i in 0 .. N {\n    T[i] = X[i]\n  }\n}\n",
        "E0217",
        11,
        8,
        "output `Y` is never written",
    ),
    (
        "loop_carried",
        loop("  Y[0] = X[0]", "  for i in 1 .. N {", "    Y[i] = Y[i - 1] + X[i]", "  }"),
        "E0218",
        16,
        12,
        "loop `i` is not `seq`",
    ),
    (
        "loop_carried_backward",
        loop(
            "  for i in 0 .. N {",
            "    Y[i] = X[i]",
            "  }",
            "  for i in 0 .. N - 1 {",
            "    T[i] = X[i]",
            "    Y[i] = T[i + 1]",
            "  }",
        ),
        "E0218",
        19,
        12,
        "`T[i + 1]`",
    ),
    (
        "loop_carried_reduction",
        loop(
            "  for i in 0 .. N {",
            "    Y[i] = X[i]",
            "  }",
            "  for i in 1 .. N {",
            "    T[i] = X[i]",
            "    T[i] += T[i - 1]",
            "  }",
        ),
        "E0218",
        19,
        13,
        "`T[i - 1]` reads an element written by another iteration",
    ),
    (
        "float_into_int",
        kernel("  for i in 0 .. N {\n    J[i] = X[i]\n    Y[i] = X[i]\n  }\n", "temp J : i64[N]\n"),
        "E0219",
        16,
        12,
        "cannot store a float-valued expression",
    ),
    (
        "int_into_bool",
        kernel("  for i in 0 .. N {\n    B[i] = 1\n    Y[i] = X[i]\n  }\n", "temp B : bool[N]\n"),
        "E0219",
        16,
        12,
        "cannot store a int-valued expression",
    ),
    (
        "negative_size",
        HEADER.replace("size M = 4", "size M = 2 - 5"),
        "E0221",
        5,
        10,
        "size `M` must be positive, got -3",
    ),
    (
        "size_before_declaration",
        HEADER.replace("size M = 4", "size M = K + 1\nsize K = 2"),
        "E0222",
        5,
        10,
        "size `K` is used before it is declared",
    ),
    (
        "size_divides_by_zero",
        HEADER.replace("size M = 4", "size M = N // (N - 8)"),
        "E0222",
        5,
        10,
        "divides by zero",
    ),
    (
        "size_reads_tensor",
        HEADER.replace("size M = 4", "size M = X[0]"),
        "E0222",
        5,
        10,
        "cannot read tensor `X`",
    ),
]


def aliased(body: str, decls: str = "output Z : f32[N]\n", after: str = "") -> str:
    """A valid kernel ``k`` writing Y, then ``alias kernel a`` with ``body`` (line 21 on)."""
    return kernel(VALID_KERNEL, decls) + "\nalias kernel a {\n" + body + "}\n" + after


def _alias_loop(*stmts: str) -> str:
    return "  for i in 0 .. N {\n" + "".join(f"    {s}\n" for s in stmts) + "  }\n"


ALIAS_CASES = [
    (
        "alias_computes",
        aliased(_alias_loop("Z[i] = X[i] * 2.0")),
        "E0224",
        22,
        12,
        "the value must be one access of a tensor",
    ),
    (
        "alias_gathers",
        aliased(_alias_loop("Z[i] = X[I[i]]")),
        "E0224",
        22,
        12,
        "subscripts that read no tensors",
    ),
    (
        "alias_writes_temp",
        aliased(_alias_loop("Z[i] = X[i]", "T[i] = X[i]")),
        "E0224",
        23,
        5,
        "writes `T`, which is not an output",
    ),
    (
        "alias_changes_dtype",
        aliased(_alias_loop("Z[i] = X[i]"), "output Z : f64[N]\n"),
        "E0224",
        22,
        12,
        "a view keeps its dtype",
    ),
    (
        "alias_declares_locals",
        aliased("  local L : f32[N]\n" + _alias_loop("Z[i] = X[i]")),
        "E0224",
        21,
        3,
        "declares locals",
    ),
    (
        "alias_not_last",
        aliased(
            _alias_loop("Z[i] = X[i]"),
            after="\nkernel b {\n" + _alias_loop("T[i] = X[i]") + "}\n",
        ),
        "E0224",
        26,
        1,
        "follows an alias kernel",
    ),
    (
        "alias_output_also_computed",
        aliased(_alias_loop("Z[i] = X[i]", "Y[i] = X[i]")),
        "E0224",
        14,
        1,
        "output `Y` is written by alias kernel `a` and by `k`",
    ),
    (
        "alias_chain",
        aliased(
            _alias_loop("Z[i] = X[i]"),
            "output Z : f32[N]\noutput Z2 : f32[N]\n",
            "\nalias kernel b {\n" + _alias_loop("Z2[i] = Z[i]") + "}\n",
        ),
        "E0224",
        27,
        1,
        "reads `Z`, which alias kernel `a` writes",
    ),
]
SEMANTIC_CASES += ALIAS_CASES


def _ids(cases: Sequence[tuple[object, ...]]) -> list[str]:
    return [str(c[0]) for c in cases]


def _check(err: SolarError, code: str, line: int | None, col: int | None, needle: str) -> None:
    assert err.code == code, err.render()
    assert needle in err.message, err.render()
    if line is None:
        return
    assert err.span is not None, err.render()
    assert (err.span.line, err.span.col) == (line, col), err.render()
    assert err.span.source.name == "bad.alir"


def test_tables_are_large_and_distinct() -> None:
    cases = SYNTAX_CASES + SEMANTIC_CASES
    assert len(cases) >= 35
    assert len({c[1] for c in cases}) == len(cases)
    assert len(set(_ids(cases))) == len(cases)


@pytest.mark.parametrize(
    ("name", "text", "code", "line", "col", "needle"), SYNTAX_CASES, ids=_ids(SYNTAX_CASES)
)
def test_syntax_error(
    name: str, text: str, code: str, line: int | None, col: int | None, needle: str
) -> None:
    with pytest.raises(IRSyntaxError) as info:
        parse_program(text, filename="bad.alir")
    _check(info.value, code, line, col, needle)


@pytest.mark.parametrize(
    ("name", "text", "code", "line", "col", "needle"), SEMANTIC_CASES, ids=_ids(SEMANTIC_CASES)
)
def test_verify_error(name: str, text: str, code: str, line: int, col: int, needle: str) -> None:
    program = parse_program(text, filename="bad.alir")
    with pytest.raises(IRVerifyError) as info:
        verify_program(program)
    _check(info.value, code, line, col, needle)
    first = collect_errors(program)[0]
    assert (first.code, first.message, first.span) == (code, info.value.message, info.value.span)


def test_semantic_codes_cover_the_verifier() -> None:
    codes = {c[2] for c in SEMANTIC_CASES}
    expected = {f"E02{n:02d}" for n in range(1, 20)} | {"E0221", "E0222"}
    assert expected <= codes


def test_rendered_diagnostic_format() -> None:
    program = parse_program(in_loop("Y[i] = X[j]"), filename="bad.alir")
    with pytest.raises(IRVerifyError) as info:
        verify_program(program)
    lines = render_diagnostic(info.value).split("\n")
    assert lines == [
        "error[E0204]: `j` is not bound by an enclosing loop or a size",
        "  --> bad.alir:15:14",
        "   |",
        "15 |     Y[i] = X[j]",
        "   |              ^",
    ]
    assert info.value.render() == "\n".join(lines)


def test_rendered_diagnostic_with_notes_and_wide_caret() -> None:
    program = parse_program(in_loop("Y[i] = X[i + 1]"), filename="bad.alir")
    with pytest.raises(IRVerifyError) as info:
        verify_program(program)
    text = info.value.render()
    assert text.startswith("error[E0216]: subscript `i + 1` of `X` reaches 8")
    source_line, caret_line = text.split("\n")[3:5]
    assert source_line == "15 |     Y[i] = X[i + 1]"
    assert caret_line == "   |              ^^^^^"
    assert "  = note: at i = 7 with the default sizes (N = 8, M = 4)" in text


def test_rendered_syntax_error_caret_under_token() -> None:
    with pytest.raises(IRSyntaxError) as info:
        parse_program(HEADER.replace("f32[N]\ninput I", "f31[N]\ninput I"), filename="bad.alir")
    assert info.value.render().split("\n")[1:5] == [
        " --> bad.alir:7:11",
        "  |",
        "7 | input X : f31[N]",
        "  |           ^^^",
    ]


def test_collect_errors_reports_several_in_source_order() -> None:
    text = loop(
        "  for i in 0 .. N {",
        "    Y[i] = Z[i]",
        "    Y[i] = X[j]",
        "    X[i] = 1.0",
        "  }",
    )
    errors = collect_errors(parse_program(text, filename="bad.alir"))
    assert [(e.code, e.span.line if e.span else None) for e in errors] == [
        ("E0203", 15),
        ("E0204", 16),
        ("E0214", 17),
    ]
