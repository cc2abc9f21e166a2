"""Print/parse roundtrips: ``parse(print(p)) == p`` and printing is a fixed point."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from solar.ir import Expr, Program, parse_expr, parse_program, print_expr, print_program

from .strategies import exprs, programs, valid_programs

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "ir").glob("*.alir"))


@given(programs)
def test_random_program_roundtrips(program: Program) -> None:
    text = print_program(program)
    again = parse_program(text)
    assert again == program
    assert print_program(again) == text


@given(valid_programs())
def test_random_valid_program_roundtrips(program: Program) -> None:
    text = print_program(program)
    assert parse_program(text) == program
    assert print_program(parse_program(text)) == text


@given(exprs(20))
def test_random_expression_roundtrips(expr: Expr) -> None:
    text = print_expr(expr)
    assert parse_expr(text) == expr
    assert print_expr(parse_expr(text)) == text


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_roundtrips(path: Path) -> None:
    program = parse_program(path.read_text(encoding="utf-8"), filename=str(path))
    text = print_program(program)
    assert parse_program(text) == program
    assert print_program(parse_program(text)) == text
