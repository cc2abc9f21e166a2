"""Control flow: scan (seq loops), while with static trip counts, cond (guarded branches)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from jax_check import check_fn, program_costs, rand, run_lowered

from solar.frontends.jaxfe import lower_jaxpr, reference_data, trace_function
from solar.ir import For, If, print_program

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = jax.lax
pytestmark = pytest.mark.jax

X = rand(5, 3)
V = rand(3)


def _seq_loops(lowered: Any) -> list[For]:
    from solar.ir import walk_stmts

    out = []
    for k in lowered.program.kernels:
        for stmt, _ in walk_stmts(k.body):
            if isinstance(stmt, For) and stmt.seq:
                out.append(stmt)
    return out


def test_scan_carry_xs_ys() -> None:
    def f(xs: Any, c0: Any) -> Any:
        def body(c: Any, x: Any) -> Any:
            c = jnp.tanh(c * 0.9 + x)
            return c, c.sum()

        return lax.scan(body, c0, xs)

    lowered = check_fn(f, X, V)
    (loop,) = _seq_loops(lowered)
    assert loop.hi == lax_lit(5)
    assert len(lowered.program.kernels) == 1  # the scan is one kernel


def lax_lit(n: int) -> Any:
    from solar.ir import lit

    return lit(n)


def test_scan_reverse_consts_and_swapped_carries() -> None:
    w = rand(3, 3, seed=2)

    def f(xs: Any, w: Any) -> Any:
        def body(carry: Any, x: Any) -> Any:
            a, b = carry
            return (b, a + x @ w), a * 2.0

        return lax.scan(body, (jnp.zeros(3), jnp.ones(3)), xs, reverse=True)

    check_fn(f, X, w)


def test_scan_nested_and_with_cumsum() -> None:
    def f(xs: Any) -> Any:
        def outer(c: Any, row: Any) -> Any:
            inner = lax.scan(lambda d, v: (d + v, d * v), c, row)
            return inner[0], jnp.cumsum(inner[1])

        return lax.scan(outer, jnp.float32(0.0), xs)

    check_fn(f, X)


def test_scan_in_place_carry_update() -> None:
    def f(xs: Any) -> Any:
        def body(buf: Any, i: Any) -> Any:
            return buf.at[i].set(xs[i].sum()), None

        out, _ = lax.scan(body, jnp.zeros(5), jnp.arange(5))
        return out

    lowered = check_fn(f, X)
    text = print_program(lowered.program)
    assert "dynamic_update_slice" not in [k.name for k in lowered.program.kernels]
    assert "seq for" in text


def test_fori_loop_static() -> None:
    check_fn(lambda v: lax.fori_loop(0, 4, lambda i, c: c * 0.5 + i, v), V)


@pytest.mark.parametrize(
    "cond",
    [lambda s: s[0] < 6, lambda s: s[0] <= 5, lambda s: 6 > s[0], lambda s: s[0] != 6],  # noqa: SIM300
    ids=["lt", "le", "gt_swapped", "ne"],
)
def test_while_static_trip_count(cond: Any) -> None:
    def f(v: Any) -> Any:
        return lax.while_loop(cond, lambda s: (s[0] + 1, s[1] * 1.5 - 0.1), (1, v))[1]

    lowered = check_fn(f, V)
    (loop,) = _seq_loops(lowered)
    assert loop.hi == lax_lit(5)


# (start, condition, step, trips): counters stepping by any constant, either direction,
# the counter on either side of the comparison.
STEPPED_WHILES = [
    (1, lambda i: i <= 6, 2, 3),
    (0, lambda i: i < 7, 3, 3),
    (4, lambda i: i > 0, -1, 4),
    (9, lambda i: 0 <= i, -3, 4),  # noqa: SIM300
    (0, lambda i: i != 8, 2, 4),
    (5, lambda i: i < 2, 1, 0),
    (2, lambda i: 10 > i, 4, 2),  # noqa: SIM300
]


@pytest.mark.parametrize(("start", "cond", "step", "trips"), STEPPED_WHILES)
def test_while_constant_step_trip_count(start: int, cond: Any, step: int, trips: int) -> None:
    def f(v: Any) -> Any:
        return lax.while_loop(
            lambda s: cond(s[0]), lambda s: (s[0] + step, jnp.sin(s[1]) * 1.5), (start, v)
        )[1]

    lowered = check_fn(f, V)
    loops = _seq_loops(lowered)
    assert [lp.hi for lp in loops] == ([lax_lit(trips)] if trips else [])
    flops = program_costs(lowered.program)[0]
    assert flops == trips * (2 * V.size + 1)  # sin and multiply per element, the counter step


def test_while_stepping_away_from_its_bound_is_uncovered() -> None:
    def f(v: Any) -> Any:
        return lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] - 1, s[1] * 2.0), (0, v))[1]

    lowered = lower_jaxpr(trace_function(f, (V,)))
    assert [u.target for u in lowered.coverage] == ["while"]


def test_while_bound_in_carry() -> None:
    def f(v: Any) -> Any:
        return lax.while_loop(
            lambda s: s[0] < s[1], lambda s: (s[0] + 1, s[1], s[2] + 1.0), (0, 3, v)
        )[2]

    check_fn(f, V)


def test_while_dynamic_is_uncovered() -> None:
    def f(v: Any) -> Any:
        return lax.while_loop(lambda s: s.sum() < 100.0, lambda s: s * 2.0 + 1.0, v)

    lowered = check_fn(f, np.abs(V) + 1.0, covered=False)
    assert [u.target for u in lowered.coverage] == ["while"]
    assert lowered.coverage[0].bytes_share > 0


def test_cond_guarded_branch_kernels() -> None:
    def f(v: Any, p: Any) -> Any:
        return lax.cond(p.sum() > 0, lambda a: jnp.exp(a) + 1.0, lambda a: a * 2.0, v)

    for sign in (1.0, -1.0):
        lowered = check_fn(f, V, np.full(2, sign, np.float32))
    (region,) = lowered.cond_regions
    assert len(region.branches) == 2
    assert all(region.branches)
    kernels = {k.name: k for k in lowered.program.kernels}
    for name in region.branches[0] + region.branches[1]:
        (stmt,) = kernels[name].body
        assert isinstance(stmt, If)  # value-dependent guard on the predicate
    assert any("cond" in n for n in lowered.notes)


def test_cond_charges_the_cheapest_branch() -> None:
    """Note [Cheapest branch]: the zeros branch does no matmul, so none is charged."""

    def f(v: Any) -> Any:
        return lax.cond(
            v[0] > 0, lambda a: a @ jnp.ones((3, 64)), lambda a: jnp.zeros((1, 64)), v[None, :]
        )

    lowered = check_fn(f, V)
    flops, _, _ = program_costs(lowered.program)
    assert flops < 3 * 64 * 3


def test_nested_cond() -> None:
    def f(v: Any, p: Any) -> Any:
        def outer(a: Any) -> Any:
            s = jnp.tanh(a).sum()
            return lax.cond(s > 0, lambda b: b * s, lambda b: b - s, a)

        return lax.cond(p[0] > 0, outer, lambda a: a + 1.0, v)

    for sign in (1.0, -1.0):
        for q in (V, -V):
            lowered = check_fn(f, q, np.full(1, sign, np.float32))
    assert len(lowered.cond_regions) == 2


def test_switch_three_branches_and_clamping() -> None:
    def f(v: Any, i: Any) -> Any:
        return lax.switch(i, [lambda a: a + 1.0, lambda a: a * 3.0, lambda a: -a], v)

    def g(v: Any, i: Any) -> Any:
        return f(v, i[0])

    for idx in (-2, 0, 1, 2, 7):
        lowered = check_fn(g, V, np.array([idx], np.int32))
        assert len(lowered.cond_regions[0].branches) == 3


def test_cond_literal_predicate_inlines_one_branch() -> None:
    def f(v: Any) -> Any:
        return lax.cond(True, lambda a: a + 1.0, lambda a: a * 100.0, v)

    lowered = check_fn(f, V)
    assert not lowered.cond_regions


def test_cond_inside_scan() -> None:
    def f(xs: Any) -> Any:
        def body(c: Any, x: Any) -> Any:
            c = lax.cond(x.sum() > 0, lambda a: a + x, lambda a: a * 0.5, c)
            return c, c

        return lax.scan(body, jnp.zeros(3), xs)

    lowered = check_fn(f, X)
    assert len(lowered.program.kernels) <= 2
    inputs, want = reference_data(trace_function(f, (X,)), lowered=lowered)
    got = run_lowered(lowered, inputs)
    np.testing.assert_allclose(got["y1"], want["y1"], rtol=1e-5, atol=1e-6)
