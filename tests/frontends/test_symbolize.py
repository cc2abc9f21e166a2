"""`symbolize_sizes`: following traced dimensions back to the size constants.

A synthetic "tracer" prints IR whose literals are known functions of the sizes, so
every expectation is hand arithmetic; a hypothesis property checks that a fitted
monomial or affine form reproduces the formula at bindings it never saw.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from hypothesis import given
from hypothesis import strategies as st

from solar.frontends.kit import symbolize_sizes
from solar.frontends.kit.symbolize import _fits
from solar.ir import Program, parse_program, print_program, resolve_sizes

TEMPLATE = """solar-ir 1
program p

input X : f32[{b}, {s}, {d}]
output Y : f32[{b}, {h}, {s}, {hd}]
output Z : f32[{rows}, {d3}]

kernel split_heads {{
  for i in 0 .. {b} {{
    for h in 0 .. {h} {{
      for t in 0 .. {s} {{
        for k in 0 .. {hd} {{
          Y[i, h, t, k] = X[i, t, h * {hd} + k]
        }}
      }}
    }}
  }}
}}

kernel widen {{
  for r in 0 .. {rows} {{
    for c in 0 .. {d3} {{
      Z[r, c] = X[r // {s}, r % {s}, c % {d}]
    }}
  }}
}}
"""


def _tracer(extra: Callable[[Mapping[str, int]], int] | None = None):  # type: ignore[no-untyped-def]
    """A fake capture: the program the template gives at a binding (and the binding)."""

    def capture_at(binding: Mapping[str, int]) -> tuple[Program, Mapping[str, int]]:
        full = {"B": 2, "S": 8, "D": 32, "H": 4, **binding}
        b, s, d, h = full["B"], full["S"], full["D"], full["H"]
        d3 = 3 * d if extra is None else extra(full)
        text = TEMPLATE.format(b=b, s=s, d=d, h=h, hd=d // h, rows=b * s, d3=d3)
        return parse_program(text), full

    return capture_at


BASE = {"B": 2, "S": 8, "D": 32, "H": 4}


def test_follows_every_size_and_tells_coincident_literals_apart() -> None:
    capture_at = _tracer()
    program, _ = capture_at({})
    result = symbolize_sizes(program, BASE, capture_at)
    assert result.symbolic and result.reason is None
    assert result.sizes == BASE
    text = print_program(result.program)
    # S = 8 and D // H = 8 at the base: two literals, two formulas
    assert "size D_per_H = D // H" in text
    assert "output Y : f32[B, H, S, D_per_H]" in text
    assert "X[i, t, h * D_per_H + k]" in text
    assert "size B_S = B * S" in text and "size D_x3 = 3 * D" in text
    # re-bound, the symbolic program is the program captured there (shapes, bounds, subscripts)
    other = {"B": 5, "S": 24, "D": 96, "H": 8}
    sizes = resolve_sizes(result.program, other)
    assert sizes["D_per_H"] == 12 and sizes["B_S"] == 120 and sizes["D_x3"] == 288


def test_large_check_inputs_are_checked_at_halved_sizes() -> None:
    # X is 2*8*32 f32 = 2 KiB at the base and 27x that at 3x: over a 4 KiB budget the
    # check capture halves every size (B = 2 is tripled: halving it would reach 1)
    seen: list[Mapping[str, int]] = []
    tracer = _tracer()

    def capture_at(binding: Mapping[str, int]) -> tuple[Program, Mapping[str, int]]:
        seen.append(dict(binding))
        return tracer(binding)

    program, _ = capture_at({})
    plain = symbolize_sizes(program, BASE, _tracer())
    small = symbolize_sizes(program, BASE, capture_at, verify_input_bytes=4096)
    assert seen[-1] == {"B": 6, "D": 16, "H": 2, "S": 4}
    assert small.checked_at == "B=6, D=16, H=2, S=4" and plain.checked_at == "3x"
    assert print_program(small.program) == print_program(plain.program)
    roomy = symbolize_sizes(program, BASE, capture_at, verify_input_bytes=27 * 2048)
    assert roomy.checked_at == "3x" and seen[-1] == {"B": 6, "D": 96, "H": 12, "S": 24}


def test_a_literal_with_no_simple_formula_leaves_its_size_constant() -> None:
    # ceil(D / 5): neither a monomial nor affine in D
    capture_at = _tracer(lambda f: -(-f["D"] // 5))
    program, _ = capture_at({})
    result = symbolic = symbolize_sizes(program, BASE, capture_at)
    assert "D" in symbolic.constant and "no simple formula" in symbolic.constant["D"]
    # H still moves (and D // H with D fixed is 32 // H: a monomial in H)
    assert set(result.sizes) == {"B", "S", "H"}


def test_sizes_of_one_are_not_followed() -> None:
    capture_at = _tracer()
    program, _ = capture_at({"B": 1})
    result = symbolize_sizes(program, {**BASE, "B": 1}, capture_at)
    assert "B" in result.constant and "B" not in result.sizes


@given(
    coef=st.integers(1, 9),
    e1=st.sampled_from([-1, 1, 2]),
    e2=st.sampled_from([0, 1]),
    s1=st.integers(1, 6),
    s2=st.integers(1, 6),
)
def test_a_fitted_monomial_reproduces_the_formula_elsewhere(
    coef: int, e1: int, e2: int, s1: int, s2: int
) -> None:
    a0, b0 = 2**s1 * 3, 2**s2 * 5
    # a traced dimension is exact: with A in the denominator, the numerator is a
    # multiple of A at A0, 2*A0 and 3*A0 (36 * 2**s1 is)
    k = coef * (36 * 2**s1 if e1 < 0 else 1)

    def f(a: int, b: int) -> int:
        num: int = k * (a if e1 > 0 else 1) ** abs(e1) * b**e2
        assert e1 > 0 or num % a == 0
        return num // (a if e1 < 0 else 1)

    v0 = f(a0, b0)
    moved = {"A": f(2 * a0, b0)}
    if e2:
        moved["B"] = f(a0, 2 * b0)
    fits = _fits(v0, moved, {"A": a0, "B": b0})
    assert fits, (v0, moved)
    check = {"A": 3 * a0, "B": 3 * b0}
    assert any(fit.value(check) == f(3 * a0, 3 * b0) for fit in fits)
