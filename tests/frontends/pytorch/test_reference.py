"""Reference data at full and reduced sizes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from solar.diagnostics import FrontendError
from solar.frontends.pytorch import reference_at_reduced_sizes
from solar.frontends.pytorch.reference import program_bytes

torch = pytest.importorskip("torch")

from torch_check import assert_outputs_close, run_lowered  # noqa: E402

pytestmark = pytest.mark.torch

MODEL = """
import torch
import torch.nn as nn

batch_size = 64
seq_len = 32
dim = 48
num_heads = 4


class Model(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads = heads

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        att = torch.einsum("bshd,bthd->bhst", q, k).softmax(-1)
        return torch.einsum("bhst,bthd->bshd", att, v).reshape(b, s, d)


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, num_heads]
"""


def test_reduced_sizes_fit_the_budget_and_validate(tmp_path: Path) -> None:
    path = tmp_path / "attn.py"
    path.write_text(MODEL)
    red = reference_at_reduced_sizes(path, 256 * 1024)
    lowered, inputs, outputs, description = red.lowered, red.inputs, red.outputs, red.description
    assert "batch_size 64->" in description
    assert "seq_len 32->" in description
    assert "num_heads" not in description
    assert inputs["x0"].nbytes < 64 * 32 * 48 * 4
    assert_outputs_close(run_lowered(lowered, inputs), outputs, 1e-4, 1e-5)


def test_full_size_when_it_fits(tmp_path: Path) -> None:
    path = tmp_path / "attn.py"
    path.write_text(MODEL.replace("batch_size = 64", "batch_size = 1"))
    red = reference_at_reduced_sizes(path, 1 << 30)
    assert red.description.startswith("full size")
    assert red.inputs["x0"].shape == (1, 32, 48)


def test_no_reduction_fits(tmp_path: Path) -> None:
    path = tmp_path / "attn.py"
    path.write_text(MODEL)
    with pytest.raises(FrontendError) as info:
        reference_at_reduced_sizes(path, 16)
    assert info.value.code == "E0511"


def test_program_bytes_counts_inputs_params_and_new_tensors(tmp_path: Path) -> None:
    from solar.frontends.pytorch import trace_model_file

    path = tmp_path / "attn.py"
    path.write_text(MODEL.replace("batch_size = 64", "batch_size = 2"))
    cap = trace_model_file(path)
    assert program_bytes(cap) > cap.info.input_bytes + cap.info.param_bytes
    assert np.isfinite(program_bytes(cap))
