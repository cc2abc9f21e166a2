"""Outer products: torch.outer (mul of views) and torch.addr."""

import torch
import torch.nn as nn

M = 7
N = 9


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, u, v, c):
        return torch.outer(u, v), torch.addr(c, u, v, beta=2.0, alpha=0.5)


def get_inputs():
    return [torch.randn(M), torch.randn(N), torch.randn(M, N)]


def get_init_inputs():
    return []
