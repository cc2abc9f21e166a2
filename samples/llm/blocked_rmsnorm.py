"""A row-wise RMS norm written like a Triton kernel, emulated in plain PyTorch.

`_rmsnorm_kernel` is the body of one program instance: it reads its
`program_id`, loads a block of rows (masked at the ragged end), and writes the
normalised rows. `_launch` runs it over the grid, as `kernel[grid](...)` would.
No triton import: the block loop is ordinary Python, which the tracer cannot
lower. `solar analyze samples/llm/blocked_rmsnorm.py --frontend llm`
translates it through the LLM path.
"""

import torch
from torch import nn

BLOCK_M = 4


def _cdiv(a, b):
    return (a + b - 1) // b


def _rmsnorm_kernel(program_id, x, w, out, n_rows, n_cols, eps, block_m):
    pid = program_id(0)
    rows = torch.arange(block_m) + pid * block_m
    mask = rows < n_rows
    rows = rows[mask]
    xb = x[rows, :n_cols].to(torch.float32)
    mean_sq = (xb * xb).sum(dim=1, keepdim=True) / n_cols
    out[rows, :n_cols] = (xb * torch.rsqrt(mean_sq + eps) * w).to(out.dtype)


def _launch(grid, kernel, *args):
    for pid in range(grid[0]):
        kernel(lambda axis, pid=pid: pid, *args)


class Model(nn.Module):
    def __init__(self, n_cols, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.9, 1.1, n_cols))
        self.eps = eps

    def forward(self, x):
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        grid = (_cdiv(n_rows, BLOCK_M),)
        _launch(grid, _rmsnorm_kernel, x, self.weight, out, n_rows, n_cols, self.eps, BLOCK_M)
        return out


def get_inputs():
    return [torch.randn(6, 32)]


def get_init_inputs():
    return [32, 1e-6]
