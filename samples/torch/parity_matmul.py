"""Parity sample (PyTorch side of samples/jax/parity_matmul.py): ``y = x W^T + b``."""

import torch
import torch.nn as nn

BATCH = 8
IN = 32
OUT = 16


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(OUT, IN) * 0.1)
        self.bias = nn.Parameter(torch.randn(OUT) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.t() + self.bias


def get_inputs():
    return [torch.randn(BATCH, IN)]


def get_init_inputs():
    return []
