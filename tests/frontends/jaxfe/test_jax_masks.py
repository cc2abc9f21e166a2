"""Causal masks as JAX builds them are recognised by the bounds' mask elision.

Note [Boolean identities] in `solar.ir.masks`: `jax.nn.dot_product_attention(is_causal=True)`
re-encodes its iota comparison as ``select(c, true, false)`` and ands it with ``true``;
flax's ``make_causal_mask`` stores it as 0.0/1.0 and reads it back as ``bool(f32(c))``;
both compare ``i32`` iotas. Folded, the mask is the guard ``j <= i`` and the masked-out
scores of ``Q K^T`` are not charged (as for PyTorch's ``sdpa(is_causal=True)``); unfolded,
the substituted formula only added FLOPs at every read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from jax_check import check_fn, rand

from solar.ir import elide_masked_work, eliminate_dead_code

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
pytestmark = pytest.mark.jax

B, T, N, H = 2, 8, 4, 16


def _flax_causal(q: Any, k: Any, v: Any) -> Any:
    mask = nn.make_causal_mask(jnp.ones((B, T)))  # [B, 1, T, T] float 0/1
    return nn.dot_product_attention(q, k, v, mask=mask)


CAUSAL: list[tuple[str, Callable[..., Any]]] = [
    ("jax_nn_is_causal", lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True)),
    ("flax_make_causal_mask", _flax_causal),
]


@pytest.mark.parametrize(("name", "fn"), CAUSAL, ids=[c[0] for c in CAUSAL])
def test_causal_scores_count_the_triangle(name: str, fn: Callable[..., Any]) -> None:
    from solar.einsum import lift_to_einsum

    lowered = check_fn(fn, *(rand(B, T, N, H, seed=s) for s in range(3)), rtol=1e-4, atol=1e-5)
    dense = lift_to_einsum(lowered.program)
    bounds = lift_to_einsum(
        eliminate_dead_code(
            elide_masked_work(lowered.program, keep=frozenset(lowered.keep_alive)),
            keep=lowered.keep_alive,
        )
    )

    def flops(g: Any) -> dict[str, float]:
        env = g.size_env()
        return {k.name: float(k.flops.evaluate(env)) for k in g.kernels}

    before, after = flops(dense), flops(bounds)
    full = 2 * B * N * T * T * H
    # the first contraction is Q K^T: only the j <= i triangle is charged
    qk = next(k for k, f in before.items() if f == full)
    assert after[qk] == full * (T * (T + 1) // 2) / (T * T)
    # the whole program costs less (the masking select now compares indices at each
    # score, 1 FLOP by the counter's rules, where it read a precomputed mask)
    assert sum(after.values()) < sum(before.values())
