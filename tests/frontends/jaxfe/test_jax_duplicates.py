"""A jaxpr that holds the same equations twice is charged once, as XLA's CSE computes it.

Note [Duplicate kernels] in `solar.ir.passes`: a LayerNorm's mean of squares and an
RMSNorm over the same input each square ``x``, sum and divide; the jaxpr keeps both
copies, XLA merges them, and so do the bounds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze

pytest.importorskip("jax")
pytestmark = pytest.mark.jax

R, C = 64, 256

NORMS = f"""
import jax.numpy as jnp
import numpy as np

def f(x):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    ms = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    ln = (x - mu) * jnp.reciprocal(jnp.sqrt(ms - mu * mu + 1e-5))
    rms = x * jnp.reciprocal(jnp.sqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + 1e-6))
    return ln + rms

def get_inputs():
    return [np.random.default_rng(0).standard_normal(({R}, {C}), dtype=np.float32)]
"""


def test_layernorm_and_rmsnorm_square_once(tmp_path: Path) -> None:
    path = tmp_path / "norms.py"
    path.write_text(NORMS)
    report = analyze(path, AnalyzeOptions(frontend="jax", archs=("H100_SXM",), cache="cold"))
    assert report.validation.status == "passed"
    # square, its row sum and the divide by C of the RMSNorm repeat the LayerNorm's
    assert (report.ir.kernels, report.ir.duplicate_kernels, report.ir.dead_kernels) == (20, 3, 0)
    # per element: the mean's sum, the square and its sum, x - mu, its scale, the
    # RMSNorm's scale and the final add (7); per row: two means' divides, mu * mu, the
    # subtract, two (+ eps), two sqrt and two reciprocals (10). Charged as written, the
    # second square, sum and divide added R*C + R*C + R = 32,832 FLOPs.
    assert report.flops == 7 * R * C + 10 * R
    # the fused bound reads x and writes the output either way
    assert report.fused_dram_bytes == 2 * 4 * R * C
