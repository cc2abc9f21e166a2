"""Matrix multiplication (torch.matmul on 2-D tensors -> aten.mm)."""

import torch
import torch.nn as nn

M = 16
K = 24
N = 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
