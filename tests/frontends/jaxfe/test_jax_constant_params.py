"""Zero- and one-initialised Flax parameters keep their work through the whole pipeline.

Note [Uniform parameters] in `solar.validate.constants`: after validation the pipeline turns
parameters whose captured values are an index pattern (a ``tril`` buffer) into index
formulas. A uniform value is an initializer's, not a mask: LoRA's ``B`` starts at zero,
stacked (``nn.scan``/``nn.vmap``) biases and LayerNorm scales are 2-D zeros and ones.
Folding them dropped the LoRA matmul's FLOPs and charged a ``select`` per read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze

pytest.importorskip("flax")
pytestmark = pytest.mark.jax

LORA = """
import flax.linen as nn
import numpy as np


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
        a = nn.Dense(4, use_bias=False)(x)
        b = nn.Dense(32, use_bias=False, kernel_init=nn.initializers.zeros)(a)
        pos = self.param("pos", nn.initializers.{init}, (16, 32))
        return x + b + pos


def get_inputs():
    return [np.random.default_rng(1).standard_normal((16, 32), dtype=np.float32)]
"""
N, D, R = 16, 32, 4  # literal in the file: sizes that are module constants stay symbolic,
# and only parameters of literal shape are matched against index patterns


@pytest.mark.parametrize("init", ["zeros", "ones"])
def test_zero_initialised_weights_keep_their_flops(tmp_path: Path, init: str) -> None:
    src = tmp_path / "lora.py"
    src.write_text(LORA.replace("{init}", init))
    report = analyze(src, AnalyzeOptions(frontend="jax"))
    assert report.validation.status == "passed"
    assert report.coverage.complete
    # x @ A, a @ B (2 FLOPs per multiply-add), then two adds over N x D
    assert report.flops == 2 * N * D * R + 2 * N * R * D + 2 * N * D
    assert not any("constant buffers" in n for n in report.frontend.notes)
