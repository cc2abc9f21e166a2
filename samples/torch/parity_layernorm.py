"""Parity sample (PyTorch side of samples/jax/parity_layernorm.py): layer norm written with ops."""

import torch
import torch.nn as nn

B, S, D = 4, 8, 32
EPS = 1e-5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(D))
        self.bias = nn.Parameter(torch.zeros(D))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.sum(dim=-1, keepdim=True) / D
        xc = x - mean
        var = (xc * xc).sum(dim=-1, keepdim=True) / D
        return xc / torch.sqrt(var + EPS) * self.weight + self.bias


def get_inputs():
    return [torch.randn(B, S, D) * 2.0 + 0.5]


def get_init_inputs():
    return []
