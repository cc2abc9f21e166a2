"""Counting: closed forms and deferred counts equal brute-force enumeration, or lower it."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.einsum import ENUMERATION_LIMIT, Count, Domain, LoopDim
from solar.einsum.counter import CountContext
from solar.ir import parse_expr
from solar.symbolic import size_symbol


def _loop(var: str, lo: str, hi: str, step: int = 1) -> LoopDim:
    return LoopDim(var, parse_expr(lo), parse_expr(hi), step)


def _brute(loops: list[tuple[str, str, str, int]], guards: list[str], dims: list[str],
           sizes: dict[str, int]) -> tuple[int, int]:
    """(points, distinct subscript tuples) by plain Python enumeration."""
    points: list[dict[str, int]] = [dict(sizes)]
    for var, lo, hi, step in loops:
        nxt: list[dict[str, int]] = []
        for env in points:
            a, b = eval(lo, {}, env), eval(hi, {}, env)
            nxt.extend({**env, var: v} for v in range(a, b, step))
        points = nxt
    py = [g.replace(" and ", ") and (") for g in guards]
    kept = [e for e in points if all(eval(f"({g})", {}, e) for g in py)]
    image = {tuple(eval(d, {}, e) for d in dims) for e in kept}
    return len(kept), len(image)


CASES = [
    # (loops, guards, dims, sizes)
    ([("i", "0", "N", 1), ("j", "0", "i + 1", 1)], [], ["i", "j"], {"N": 7}),
    ([("i", "0", "N", 1), ("j", "0", "N", 1)], ["j <= i"], ["j"], {"N": 9}),
    ([("h", "0", "Ho", 1), ("r", "0", "3", 1)], ["0 <= 2 * h + 2 * r - 1", "2 * h + 2 * r - 1 < H"],
     ["2 * h + 2 * r - 1"], {"Ho": 5, "H": 12}),
    ([("h", "0", "Ho", 1), ("r", "0", "3", 1)], ["0 <= h + r - 1", "h + r - 1 < H"],
     ["h + r - 1"], {"Ho": 10, "H": 10}),
    ([("g", "0", "G", 1), ("f", "0", "F", 1)], [], ["g * F + f"], {"G": 3, "F": 5}),
    ([("e", "0", "E", 1)], [], ["e // 8", "e % 8"], {"E": 32}),
    ([("i", "0", "N", 2)], [], ["i"], {"N": 9}),
    ([("i", "1", "N", 1)], ["i < M"], ["i"], {"N": 9, "M": 4}),
    ([("i", "0", "N", 1), ("j", "0", "N", 1)], ["i + j < N"], ["i + j"], {"N": 6}),
    ([("i", "0", "N", 1), ("j", "0", "M", 1)], [], ["i + j"], {"N": 6, "M": 4}),
    ([("i", "0", "N", 1), ("j", "0", "M", 1)], [], ["i - j", "i + j"], {"N": 6, "M": 4}),
]


@pytest.mark.parametrize(("loops", "guards", "dims", "sizes"), CASES)
def test_counts_equal_brute_force(loops: list[tuple[str, str, str, int]], guards: list[str],
                                  dims: list[str], sizes: dict[str, int]) -> None:
    ctx = CountContext()
    domain = Domain(tuple(_loop(*lp) for lp in loops), tuple(parse_expr(g) for g in guards))
    points, image = _brute(loops, guards, dims, sizes)
    assert ctx.points(domain).evaluate(sizes) == points
    count, _ = ctx.image(domain, tuple(parse_expr(d) for d in dims))
    assert count.evaluate(sizes) == image


def test_closed_forms_are_symbolic() -> None:
    ctx = CountContext()
    tri = Domain((_loop("i", "0", "N"), _loop("j", "0", "N")), (parse_expr("j <= i"),))
    assert ctx.points(tri).formula == "N**2/2 + N/2"
    grouped, _ = ctx.image(Domain((_loop("g", "0", "G"), _loop("f", "0", "F"))),
                           (parse_expr("g * F + f"),))
    assert grouped.formula == "F*G"
    proj, _ = ctx.image(tri, (parse_expr("j"),))
    assert proj.formula == "N"


def test_deferred_count_describes_itself() -> None:
    ctx = CountContext()
    dom = Domain((_loop("h", "0", "Ho"), _loop("r", "0", "3")),
                 (parse_expr("0 <= 2 * h + r - 1"), parse_expr("2 * h + r - 1 < H")))
    c = ctx.points(dom)
    assert c.formula == "q0"
    assert c.definitions == ("q0 = #{(h, r) | 0 <= h < Ho, 0 <= r < 3, 0 <= 2 * h + r - 1, "
                             "2 * h + r - 1 < H}",)
    assert c.evaluate({"Ho": 5, "H": 9}) == 2 + 3 + 3 + 3 + 2


def test_enumeration_limit_gives_a_lower_bound() -> None:
    ctx = CountContext()
    dom = Domain((_loop("i", "0", "N"), _loop("j", "0", "N")), (parse_expr("i != j"),))
    n = 2 * int(ENUMERATION_LIMIT**0.5)
    c = ctx.points(dom)
    (dc,) = c.deferred
    value, exact = dc.evaluate({"N": n})
    assert not exact
    assert 0 < value <= n * n - n
    assert dc.evaluate({"N": 10}) == (90, True)


def test_count_arithmetic() -> None:
    m = Count.of(size_symbol("M"))
    assert (m * 2 + Count.of(1)).evaluate({"M": 3}) == 7
    assert m.maximum(Count.of(5), exact=False).evaluate({"M": 3}) == 5
    assert not m.maximum(Count.of(5), exact=False).exact


@st.composite
def _domains(draw: st.DrawFn) -> tuple[list[tuple[str, str, str, int]], list[str], list[str],
                                       dict[str, int]]:
    n = draw(st.integers(1, 9))
    m = draw(st.integers(1, 9))
    step = draw(st.sampled_from([1, 1, 2, 3]))
    inner_hi = draw(st.sampled_from(["M", "i + 1", "N - i", "M + i"]))
    loops = [("i", "0", "N", step), ("j", "0", inner_hi, 1)]
    a, b, c = draw(st.integers(-3, 3)), draw(st.integers(-3, 3)), draw(st.integers(-4, 6))
    guards = draw(st.sampled_from([[], [f"{a} * i + {b} * j + {c} >= 0"],
                                   [f"{a} * i + {b} * j < M + {c}", "j != 1"]]))
    s, t = draw(st.integers(-3, 3)), draw(st.integers(-2, 2))
    dims = draw(st.sampled_from([["i"], ["j"], [f"{s} * i + {t} * j"], ["i", "j"], ["j // 2"],
                                 [f"{s} * i + j", "i % 2"]]))
    return loops, guards, dims, {"N": n, "M": m}


@given(_domains())
def test_random_domains_match_brute_force(
    case: tuple[list[tuple[str, str, str, int]], list[str], list[str], dict[str, int]],
) -> None:
    loops, guards, dims, sizes = case
    ctx = CountContext()
    domain = Domain(tuple(_loop(*lp) for lp in loops), tuple(parse_expr(g) for g in guards))
    points, image = _brute(loops, guards, dims, sizes)
    pc = ctx.points(domain)
    ic, _ = ctx.image(domain, tuple(parse_expr(d) for d in dims))
    assert pc.evaluate(sizes) == points
    assert ic.evaluate(sizes) == image


def test_brute_helper_sanity() -> None:
    assert _brute([("i", "0", "N", 1)], [], ["i // 2"], {"N": 5}) == (5, 3)
    assert list(itertools.islice(itertools.count(), 2)) == [0, 1]
