"""Parity sample (PyTorch side of samples/jax/parity_conv2d.py): 3x3 conv, stride 2, pad 1, bias."""

import torch
import torch.nn as nn
import torch.nn.functional as F

N, C, H, W = 2, 3, 12, 12
K = 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(K, C, 3, 3) * 0.2)
        self.bias = nn.Parameter(torch.randn(K) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, self.weight, stride=2, padding=1)
        return y + self.bias.view(1, K, 1, 1)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []
