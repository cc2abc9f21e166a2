"""``lax.cond``/``lax.switch`` charge the cheapest branch (issue 28; Note [Cheapest branch]
in `solar.einsum.branches`).

Each branch runs under a value-dependent guard; whichever runs, the program does at least
the per-quantity minimum over branches. Hand minima per program (N x N fp32 operand ``x``,
output ``y``): the FLOPs and the compulsory bytes (inputs read, outputs written once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax_check import check_fn, program_costs, rand

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = jax.lax
pytestmark = pytest.mark.jax

N = 32
E = N * N  # elements of x and y


def _matmul_or_double(p: Any, x: Any, w: Any) -> Any:
    return lax.cond(p[0] > 0, lambda a: jnp.tanh(a @ w), lambda a: a * 2.0, x)


def _three_way(i: Any, x: Any, w: Any) -> Any:
    return lax.switch(i[0], [lambda a: a + 1.0, lambda a: a * a * a, lambda a: a @ w], x)


def _identity_branch(p: Any, x: Any, w: Any) -> Any:
    return lax.cond(p[0] > 0, lambda a: a, lambda a: jnp.exp(a) * 3.0, x)


def _shared_reduction(p: Any, x: Any, w: Any) -> Any:
    return lax.cond(p[0] > 0, lambda a: a * a.sum(), lambda a: a - a.sum(), x)


SCALARS = 16  # at most this many FLOPs of scalar work on the predicate or index

# name: (program, FLOPs of the branches (hand), compulsory bytes (hand)); the predicate
# or index adds up to SCALARS FLOPs (p > 0, its cast; the switch index clamped)
CASES: dict[str, tuple[Callable[..., Any], int, int]] = {
    # branch 1: x * 2 (E FLOPs) reads x, writes y; branch 0 adds a matmul and w: neither is
    # in every branch, so neither is charged
    "cond_matmul_or_double": (_matmul_or_double, E, 4 + 2 * 4 * E),
    # branch 0: E adds, 1: 2E multiplies, 2: a matmul and no vector FLOPs: the minimum of
    # each kind of work is 0; every branch reads x and writes y
    "switch_three_way": (_three_way, 0, 4 + 2 * 4 * E),
    # branch 1 copies x to y (no FLOPs); x read, y written
    "cond_identity_branch": (_identity_branch, 0, 4 + 2 * 4 * E),
    # both reduce x (E adds) then one element-wise op (E): 2E each
    "cond_shared_reduction": (_shared_reduction, 2 * E, 4 + 2 * 4 * E),
}


@pytest.mark.parametrize("case", list(CASES))
def test_cheapest_branch_is_charged(case: str) -> None:
    fn, flops, fused = CASES[case]
    pred = np.array([1], np.int32) if case.startswith("switch") else np.ones(1, np.float32)
    lowered = check_fn(fn, pred, rand(N, N, seed=1), rand(N, N, seed=2), rtol=1e-4, atol=1e-4)
    got_flops, _, got_fused = program_costs(lowered.program)
    assert got_fused == fused
    assert flops <= got_flops <= flops + SCALARS


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=2, max_size=3))
def test_flops_are_the_cheapest_branchs(chain: list[int]) -> None:
    """Branch ``b`` multiplies by 2 ``chain[b]`` times (``chain[b]`` kernels of E FLOPs):
    charged ``min(chain) * E`` plus the index's scalar work."""

    def branch(n: int) -> Callable[[Any], Any]:
        def go(a: Any) -> Any:
            for _ in range(n):
                a = a * 2.0
            return a
        return go

    def f(i: Any, x: Any) -> Any:
        return lax.switch(i[0], [branch(n) for n in chain], x)

    lowered = check_fn(f, np.array([0], np.int32), rand(N, N, seed=1))
    flops, _, fused = program_costs(lowered.program)
    assert min(chain) * E <= flops <= min(chain) * E + SCALARS
    assert fused == 4 + 2 * 4 * E
