"""`format_program` (``solar ir fmt``): canonical text that keeps every comment."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.ir import Program, format_program, parse_program, print_program

from .strategies import programs

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "ir").glob("*.alir"))

MESSY = """\
# leading: what this program is
solar-ir 1
program demo   # the name

# sizes
size N = 8
size M   =   N*2  # derived

input A : f32[N]
output C : f32[M]

kernel k {  # one launch
  # loop over M
  for i in 0..M {
    C[i] = A[i // 2]   # read twice
    # last statement of the loop
  }
  # end of the kernel body
}
# trailing remark
"""

EXPECTED = """\
# leading: what this program is
solar-ir 1
program demo  # the name

# sizes
size N = 8
size M = N * 2  # derived

input A : f32[N]
output C : f32[M]

kernel k {  # one launch
  # loop over M
  for i in 0 .. M {
    C[i] = A[i // 2]  # read twice
    # last statement of the loop
  }
  # end of the kernel body
}
# trailing remark
"""


def _comments(text: str) -> list[str]:
    return ["#" + line.partition("#")[2].rstrip() for line in text.splitlines() if "#" in line]


def test_every_kind_of_comment_is_kept_in_place() -> None:
    out = format_program(MESSY)
    assert out == EXPECTED
    assert parse_program(out) == parse_program(MESSY)


def test_without_comments_it_is_the_canonical_printer() -> None:
    program = parse_program(MESSY)
    assert format_program(print_program(program)) == print_program(program)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_samples_keep_their_comments_and_format_is_idempotent(path: Path) -> None:
    text = path.read_text()
    out = format_program(text, filename=str(path))
    assert _comments(out) == _comments(text)
    assert format_program(out) == out
    assert parse_program(out) == parse_program(text)


@given(programs, st.data())
def test_random_comments_survive_and_formatting_is_a_fixed_point(
    program: Program, data: st.DataObject
) -> None:
    lines = print_program(program).splitlines()
    marked = []
    for n, line in enumerate(lines):
        if data.draw(st.booleans(), label=f"own-line comment before line {n}"):
            marked.append(f"# note {n}")
        trailing = line.strip() and data.draw(st.booleans(), label=f"trailing on line {n}")
        marked.append(f"{line}  # tail {n}" if trailing else line)
    text = "\n".join(marked) + "\n"
    out = format_program(text)
    assert sorted(_comments(out)) == sorted(_comments(text))
    assert parse_program(out) == program
    assert format_program(out) == out
