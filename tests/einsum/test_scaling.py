"""Counting that scales: unions of many pieces, and bounds at full sizes (issue 17).

A union of many images (the pieces of a padded or concatenated tensor) is a max of
counts that sympy cannot order; `smax_all` must build exactly ``sympy.Max(*args)``
(Note [Max by sampling] in solar/symbolic.py) without trying every pair. Lifting and
bounding the IR samples at their real sizes (matmul 4096^3, attention L = 2048...) must
not allocate in proportion to the iteration space, and a deferred count far past
`ENUMERATION_LIMIT` must stop at the limit before it allocates.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.bounds import compute_bound_set, evaluate_costs
from solar.einsum import ENUMERATION_LIMIT, Domain, LoopDim, lift_to_einsum
from solar.einsum.counter import CountContext
from solar.hw import load_hardware_spec
from solar.ir import IntLit, SizeDecl, parse_expr, parse_program
from solar.symbolic import (
    count_symbol,
    inline_derived_sizes,
    size_symbol,
    smax_all,
    smin_all,
)

ROOT = Path(__file__).resolve().parents[2]
B, C, H, W = (size_symbol(n) for n in ("B", "C", "H", "W"))
C_p1, C_p2, H_p1, H_p2, W_p1, W_p2 = (
    size_symbol(n) for n in ("C_p1", "C_p2", "H_p1", "H_p2", "W_p1", "W_p2")
)


def _pad_pieces(rank: int) -> list[sympy.Expr]:
    """The 3**rank read images of ``x0`` in a replicate pad (samples/torch/pad_modes.py):
    derived sizes are opaque symbols, so sympy can order none of them."""
    axes = [(1, C_p1 - 1, C_p2 - C_p1), (1, H_p1 - 1, H_p2 - H_p1), (1, W_p1 - 1, W_p2 - W_p1)]
    out = [B]
    for axis in axes[3 - rank :]:
        out = [p * a for p in out for a in axis]
    return out


CASES: dict[str, list[sympy.Expr | int]] = {
    "pad pieces": _pad_pieces(2),  # type: ignore[dict-item]
    "one dominates": [B, 2 * B, B * C, B * C * H],
    "some orderable": [B * (H_p1 - 1), B * H_p1, C, C * W, B * (W_p1 - 1)],
    "with zero": [0, B * (H_p1 - 1), C - 3],
    "nested max": [sympy.Max(B, C), H, B * W],
    "with a min": [sympy.Min(B, C), B, H],
    "opaque counts": [count_symbol("q0"), count_symbol("q0") + B, count_symbol("q1") * H],
    "equal twice": [B * C, C * B, H],
    "single": [B * C],
}


@pytest.mark.parametrize("args", CASES.values(), ids=list(CASES))
def test_max_and_min_of_many_are_sympys(args: list[sympy.Expr | int]) -> None:
    assert smax_all(args) == sympy.Max(*args)
    assert smin_all(args) == sympy.Min(*args)


_SYMS = [B, C, H_p1, W_p1, count_symbol("q0")]
_terms = st.builds(
    lambda k, syms, c: k * sympy.Mul(*syms) + c,
    st.integers(1, 3),
    st.lists(st.sampled_from(_SYMS), max_size=3),
    st.integers(-2, 2),
)


@settings(max_examples=30, deadline=None)
@given(st.lists(_terms, min_size=1, max_size=5))
def test_max_of_random_terms_is_sympys(args: list[sympy.Expr]) -> None:
    assert smax_all(args) == sympy.Max(*args)


def test_inlining_derived_sizes_in_a_max_is_sympys() -> None:
    decls = [SizeDecl(n, IntLit(4)) for n in ("B", "C", "H", "W")] + [
        SizeDecl(f"{d}_p{k}", parse_expr(f"{d} + {k}")) for d in "CHW" for k in (1, 2)
    ]
    expr = 4 * sympy.Max(*_pad_pieces(2)) + B * C
    subs = {size_symbol(f"{d}_p{k}"): size_symbol(d) + k for d in "CHW" for k in (1, 2)}
    assert inline_derived_sizes(expr, decls) == str(sympy.expand(expr.xreplace(subs)))


@contextmanager
def _counting_sympy_orders() -> Iterator[list[int]]:
    """Count sympy's pairwise ordering attempts inside Max/Min construction."""
    calls = [0]
    original: Callable[..., object] = sympy.Max._is_connected.__func__  # type: ignore[attr-defined]

    def counted(cls: type, x: sympy.Expr, y: sympy.Expr) -> object:
        calls[0] += 1
        return original(cls, x, y)

    sympy.Max._is_connected = classmethod(counted)  # type: ignore[assignment]
    try:
        yield calls
    finally:
        sympy.Max._is_connected = classmethod(original)  # type: ignore[assignment]


def test_unorderable_pieces_never_reach_sympys_pairwise_ordering() -> None:
    pieces = _pad_pieces(3)
    with _counting_sympy_orders() as calls:
        out = smax_all(pieces)
    assert calls[0] == 0
    assert set(out.args) == set(pieces)  # all 27 kept: none is provably the largest
    with _counting_sympy_orders() as calls:
        assert smax_all([B, 2 * B, C]) == sympy.Max(2 * B, C)
    assert calls[0] >= 1  # the orderable pair still goes to sympy


@contextmanager
def _peak_bytes() -> Iterator[list[int]]:
    out = [0]
    tracemalloc.start()
    try:
        yield out
    finally:
        out[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


IR_SAMPLES = sorted((ROOT / "samples" / "ir").glob("*.alir"))


@pytest.mark.parametrize("path", IR_SAMPLES, ids=[p.stem for p in IR_SAMPLES])
def test_bounds_at_real_sizes_do_not_enumerate(path: Path) -> None:
    """Lift and every bound at the sample's own (realistic) sizes: memory stays far below
    one array over the iteration space (matmul 4096^3 alone would be 512 GiB of int64)."""
    program = parse_program(path.read_text(encoding="utf-8"), filename=str(path))
    with _peak_bytes() as peak:
        graph = lift_to_einsum(program)
        evaluate_costs(graph)
        for cache in ("warm", "cold"):
            compute_bound_set(graph, load_hardware_spec("H100_SXM"), cache=cache)
    assert peak[0] < 32 * 2**20


def test_a_deferred_count_far_past_the_limit_stops_before_it_allocates() -> None:
    """10^12 guarded points (no closed form): a lower bound from at most the limit's points."""
    def loop(v: str) -> LoopDim:
        return LoopDim(v, parse_expr("0"), parse_expr("N"), 1)

    dom = Domain((loop("i"), loop("j"), loop("k")), (parse_expr("(i * j) % 7 != k % 5"),))
    (dc,) = CountContext().points(dom).deferred
    with _peak_bytes() as peak:
        value, exact = dc.evaluate({"N": 10**4})
    assert not exact
    assert 0 < value <= 10**12
    assert peak[0] < 32 * 8 * ENUMERATION_LIMIT  # a few int64 columns of the limit's points
