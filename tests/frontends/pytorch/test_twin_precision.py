"""Twin matmuls get one precision (issue 31): an encoder layer's Q·Kᵀ and P·V read the
packed q/k/v projection through ``//``/``%`` digits of a flattened head index, which is no
convolution window, so both are charged at the default fp32-accurate pipe (3xTF32 on
H100), neither at TF32."""

from __future__ import annotations

import pytest

from solar.bounds import policy_pipe
from solar.einsum import lift_to_einsum
from solar.frontends.pytorch import lower_capture, trace_module

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_attention_matmuls_share_one_precision(norm_first: bool) -> None:
    layer = torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True,
                                             norm_first=norm_first)
    # --train-mode: the module's own forward (the eval fast path is one opaque op)
    low = lower_capture(trace_module(layer, [torch.randn(2, 8, 16)], train=True))
    nodes = [n for n in lift_to_einsum(low.program).nodes if n.work == "contraction"]
    assert len(nodes) >= 4  # in-projection, Q·Kᵀ, P·V, out-projection, feed-forward
    pipes = {tuple(p.label for p in policy_pipe(n.work, n.dtype, n.convolution, "default"))
             for n in nodes}
    assert pipes == {("vector:fp32", "tensor:fp32", "tensor:3xtf32", "tensor:6xbf16")}
