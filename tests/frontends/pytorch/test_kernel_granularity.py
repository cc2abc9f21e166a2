"""Ops that are one CUDA kernel are captured as one op (issue 28 item 2).

Note [CUDA kernel granularity] in `solar.frontends.pytorch.composite`: the unfused model
charges each kernel the device launches; a CPU capture saw the CPU decomposition
(``nn.RMSNorm`` as six kernels, ``softmax(half, dtype=float32)`` as a cast and a
softmax). One row per op: the kernels expected and the unfused bytes by hand (each
kernel through DRAM: the one kernel reads its inputs and writes its output once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum

torch = pytest.importorskip("torch")

from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch

N, C = 8, 64
F = torch.nn.functional
_rms = torch.nn.RMSNorm(C)
_ln, _gn, _lin = torch.nn.LayerNorm(C), torch.nn.GroupNorm(4, C), torch.nn.Linear(C, C)
_tgt = torch.randint(0, C, (N,))

# name: (program, input dtype, kernels, unfused bytes by hand)
CASES: dict[str, tuple[Callable[[Any], Any], Any, list[str], int]] = {
    # x and the weight read, the output written: one _fused_rms_norm kernel on CUDA
    "nn_RMSNorm": (_rms, torch.float32, ["rms_norm"], 4 * N * C * 2 + 4 * C),
    "F_rms_norm_no_weight": (lambda x: F.rms_norm(x, (C,)), torch.float32, ["rms_norm"],
                             4 * N * C * 2),
    # half read (2 B), float written (4 B): one _softmax(half_to_float=True)
    "torch_softmax_half_to_float": (lambda x: torch.softmax(x, -1, dtype=torch.float32),
                                    torch.float16, ["softmax"], (2 + 4) * N * C),
    "F_softmax_bf16_to_float": (lambda x: F.softmax(x, -1, dtype=torch.float32),
                                torch.bfloat16, ["softmax"], (2 + 4) * N * C),
    "Tensor_log_softmax_half_to_float": (lambda x: x.log_softmax(-1, dtype=torch.float32),
                                         torch.float16, ["log_softmax"], (2 + 4) * N * C),
    # The audit of composites CUDA runs as one kernel (issue 28 item 2), as captured:
    # native_layer_norm writes y and the per-row mean and rstd (N each), reads x, w, b
    "nn_LayerNorm": (_ln, torch.float32, ["layer_norm"], 4 * N * C * 2 + 4 * 2 * C + 4 * 2 * N),
    # native_group_norm: y, and mean and rstd per (row, group)
    "nn_GroupNorm": (_gn, torch.float32, ["group_norm"], 4 * N * C * 2 + 4 * 2 * C + 4 * 2 * N * 4),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), torch.float32, ["gelu"], 8 * N * C),
    "silu": (F.silu, torch.float32, ["silu"], 8 * N * C),
    # two kernels on CUDA too: log_softmax, then nll_loss (N i64 targets, the picked
    # elements as one gathered element (a lower bound), the scalar loss)
    "cross_entropy": (lambda x: F.cross_entropy(x, _tgt), torch.float32,
                      ["log_softmax", "nll_loss"], 8 * N * C + 8 * N + 4 + 4),
    # addmm with the bias in the GEMM epilogue: x, W, b read, y written
    "nn_Linear_bias": (_lin, torch.float32, ["addmm"], 4 * (N * C + C * C + C + N * C)),
    "linalg_vector_norm": (lambda x: torch.linalg.vector_norm(x, dim=-1), torch.float32,
                           ["linalg_vector_norm"], 4 * N * C + 4 * N),
    # F.normalize is three kernels in eager CUDA as well: norm, clamp_min, div
    "F_normalize": (lambda x: F.normalize(x, dim=-1), torch.float32,
                    ["linalg_vector_norm", "clamp_min", "div"],
                    (4 * N * C + 4 * N) + 2 * 4 * N + (4 * N * C + 4 * N + 4 * N * C)),
    # forms CUDA also runs as one kernel, recorded as before
    "softmax_float": (lambda x: torch.softmax(x, -1), torch.float32, ["softmax"], 8 * N * C),
    "softmax_half": (lambda x: torch.softmax(x, -1), torch.float16, ["softmax"], 4 * N * C),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_cuda_kernel_is_one_captured_op(case: str) -> None:
    fn, dtype, kernels, nbytes = CASES[case]
    low = check_program(fn, torch.randn(N, C).to(dtype), rtol=1e-2, atol=1e-2)
    assert [k.name for k in low.program.kernels] == kernels
    c = evaluate_costs(lift_to_einsum(low.program))
    assert float(c.read_bytes.sum() + c.written_bytes.sum()) == nbytes
