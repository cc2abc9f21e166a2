"""Every core-op sample in samples/torch lowers with zero uncovered ops and validates."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.frontends.pytorch import lower_capture, reference_data, trace_model_file

torch = pytest.importorskip("torch")

from torch_check import assert_outputs_close, run_lowered  # noqa: E402

pytestmark = pytest.mark.torch

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "torch"
CORE_SAMPLES = [
    "activations",
    "addmm",
    "argmax_min",
    "bmm",
    "cat_stack_split",
    "clamp_where",
    "cumprod",
    "cumsum_reverse",
    "einsum",
    "elementwise_mix",
    "embedding",
    "flip_roll_repeat",
    "gather_scatter",
    "index_select",
    "inplace_ops",
    "linear_gelu",
    "log_softmax",
    "logsumexp",
    "matmul",
    "norms_p",
    "outer",
    "pad_modes",
    "pixel_shuffle",
    "reshape_permute",
    "softmax",
    "sum_mean",
    "tril_triu",
    "type_casts",
    "var_std",
]


def test_core_sample_list_is_complete() -> None:
    for name in CORE_SAMPLES:
        assert (SAMPLES / f"{name}.py").is_file(), name


@pytest.mark.parametrize("name", CORE_SAMPLES)
def test_sample_lowers_fully_and_validates(name: str) -> None:
    capture = trace_model_file(SAMPLES / f"{name}.py")
    assert not capture.info.used_real_values
    lowered = lower_capture(capture)
    assert lowered.coverage == ()
    assert lowered.program.kernels
    inputs, outputs = reference_data(lowered, capture)
    got = run_lowered(lowered, inputs)
    assert_outputs_close(got, outputs, rtol=2e-3, atol=2e-3)
