"""``sort`` (`jax.lax.sort`: several operands, ``num_keys``, ``dimension``; Note [Sort
ranks] in solar/frontends/jaxfe/ops_sort.py): executed, the IR is an exact stable sort
(checked against jit on CPU, integers exactly); bounded (`sorts_as_copies`), a sort
reads each operand once, writes each output once and counts no FLOPs, never more than
a sort needs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from jax_check import check_fn, program_costs, rand

from solar.frontends.kit.sorting import sorts_as_copies

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = jax.lax
pytestmark = pytest.mark.jax

X = rand(4, 7)
TIES = np.round(rand(4, 7, seed=3) * 2.0).astype(np.float32)  # many equal keys
IDX = np.arange(28, dtype=np.int32).reshape(4, 7)[::-1].copy()

CASES = [
    ("one operand, last axis", lambda x, k, i: lax.sort(x, dimension=1), 1),
    ("one operand, first axis", lambda x, k, i: lax.sort(x, dimension=0), 1),
    ("argsort (stable, ties)", lambda x, k, i: jnp.argsort(k, axis=1, stable=True), 1),
    ("two operands, one key", lambda x, k, i: lax.sort((k, x), dimension=1, num_keys=1), 2),
    ("three operands, two keys", lambda x, k, i: lax.sort((k, x, i), dimension=1, num_keys=2), 3),
    ("integer keys", lambda x, k, i: lax.sort((i, x), dimension=0, num_keys=1), 2),
]


@pytest.mark.parametrize(("case", "fn", "operands"), CASES, ids=[c[0] for c in CASES])
def test_sort_is_exact_and_charged_its_bytes_only(case: str, fn: Any, operands: int) -> None:
    lowered = check_fn(fn, X, TIES, IDX, rtol=0.0, atol=0.0)
    flops, _, fused = program_costs(sorts_as_copies(lowered.program))
    assert flops == 0, case
    # each operand read once, each output written once (4 bytes per element), exactly
    assert fused == 2 * operands * X.size * 4, case
    assert program_costs(lowered.program)[0] > 0  # executed, the ranks are counted


def test_sort_inside_a_scan_body() -> None:
    def f(x: Any) -> Any:
        def step(c: Any, _: Any) -> Any:
            c = jnp.sort(c, axis=-1) * 0.5 + jnp.flip(c, -1)
            return c, c[:, 0]

        return lax.scan(step, x, None, length=3)

    lowered = check_fn(f, X, rtol=1e-6, atol=1e-6)
    flops, _, _ = program_costs(sorts_as_copies(lowered.program))
    assert flops == 3 * 2 * X.size  # the multiply and add per element, no sort work


def test_a_one_element_sort_is_the_identity() -> None:
    # mjx.step sorts one-element index arrays: free views, no kernel
    lowered = check_fn(lambda x: lax.sort((x[:, :1], x[:, 1:2]), dimension=1), X)
    assert program_costs(lowered.program)[0] == 0
    assert not any(t.name.startswith("sort_rank") for k in lowered.program.kernels
                   for t in k.locals)


TOP_K = [
    ("last axis", lambda x: lax.top_k(x, 3)),
    # abs: no -0.0, which XLA orders below 0.0 (Note [Sort ranks])
    ("ties: equal values by ascending index", lambda x: lax.top_k(jnp.abs(jnp.round(x * 2)), 4)),
    ("k = n", lambda x: lax.top_k(x, 7)),
    ("then softmax of the values", lambda x: jax.nn.softmax(lax.top_k(x, 2)[0])),
]


@pytest.mark.parametrize(("case", "fn"), TOP_K, ids=[c[0] for c in TOP_K])
def test_top_k_is_exact_and_charged_its_bytes_only(case: str, fn: Any) -> None:
    lowered = check_fn(fn, X, rtol=1e-6, atol=1e-6)
    assert lowered.fully_covered, case
    flops, _, fused = program_costs(sorts_as_copies(lowered.program))
    if case.startswith(("last", "k =")):
        k = 3 if case.startswith("last") else 7
        assert flops == 0
        # the operand read once; k values (f32) and k indices (i32) written per row
        assert fused == X.size * 4 + 2 * X.shape[0] * k * 4


def test_top_k_along_a_middle_axis() -> None:
    x = rand(3, 5, 4, seed=7)
    lowered = check_fn(lambda v: lax.top_k(v, 2, axis=1), x, rtol=0.0, atol=0.0)
    assert lowered.fully_covered
