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


LOCAL = """
import jax
import numpy as np

def f(q, k, v):
    return jax.nn.dot_product_attention(q, k, v, is_causal=True, local_window_size=(3, 0))

def get_inputs():
    r = np.random.default_rng(0)
    return [r.standard_normal((2, 16, 1, 8), dtype=np.float32) for _ in range(3)]
"""


def test_local_window_scores_count_the_band(tmp_path: Any) -> None:
    # Note [Iota parameters] in `solar.validate.constants`: the window compares two captured
    # `arange(16)` constants; as index formulas they are the guards j <= i and
    # i - 3 <= j (Note [Conjunctions]), and Q K^T and its scale are charged on the band:
    # rows keep 1, 2, 3, then 4 keys, 58 of the 256 pairs, 2 * 58 * 8 * 2 = 1,856 FLOPs
    # (dense 8,192). The masked value is finite (-2.4e38, not -inf), so the softmax and
    # P V stay dense, as for is_causal alone.
    from solar.pipeline import AnalyzeOptions, analyze

    path = tmp_path / "local.py"
    path.write_text(LOCAL)
    report = analyze(path, AnalyzeOptions(frontend="jax", archs=("H100_SXM",)))
    assert report.validation.status == "passed"
    flops = {k.name: k.flops for k in report.archs[0].kernels}
    # kernels named from their source (Note [JAX kernel names]): jax.nn's function
    assert flops["dot_product_attention_dot_general"] == 2 * 58 * 8 * 2
    assert flops["dot_product_attention_mul"] == 2 * 58
    assert flops["dot_product_attention_dot_general_1"] == 2 * 16 * 16 * 8 * 2
    assert any("constant buffers" in n for n in report.frontend.notes)
