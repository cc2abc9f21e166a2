"""Batched matmul, plus a broadcasting matmul that expands and copies operands."""

import torch
import torch.nn as nn

B = 3
M = 8
K = 12
N = 5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, a, b, c):
        return torch.bmm(a, b), a.unsqueeze(0) @ c


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(B, K, N), torch.randn(2, 1, K, N)]


def get_init_inputs():
    return []
