"""The nn-family model files in samples/torch lower with full coverage and validate.

Each sample is captured from its file, lowered, printed/re-parsed, verified, executed on
the real inputs and compared with eager PyTorch's outputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sample_sizes import overrides
from torch_check import assert_outputs_close, run_lowered

from solar.frontends.pytorch import lower_capture, reference_data, trace_model_file

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "torch"

NN_SAMPLES = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "depthwise_conv", "asymmetric_conv", "maxpool2d", "avgpool", "adaptive_pool",
    "batchnorm_train", "batchnorm_eval", "layernorm", "groupnorm", "instancenorm", "rmsnorm",
    "lrn", "sdpa", "sdpa_masked_gqa", "mha", "losses", "cross_entropy", "upsample", "lstm",
    "gru", "rnn", "resnet_block", "vgg_small", "transformer_encoder", "gpt_block", "lstm_lm",
    "unet_small", "mobilenet_block",
]  # fmt: skip


@pytest.mark.parametrize("name", NN_SAMPLES)
def test_sample_lowers_and_validates(name: str) -> None:
    path = SAMPLES / f"{name}.py"
    capture = trace_model_file(path, overrides=overrides(name))
    lowered = lower_capture(capture)
    assert lowered.fully_covered, f"uncovered ops: {lowered.coverage}"
    inputs, outputs = reference_data(lowered, capture)
    assert outputs, "the sample has no outputs to compare"
    got = run_lowered(lowered, inputs)
    assert_outputs_close(got, outputs, rtol=1e-4, atol=1e-5)
