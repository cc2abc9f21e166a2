"""clamp with scalar and tensor bounds, comparisons, logical ops, where and masked_fill."""

import torch
import torch.nn as nn

M = 5
N = 7


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x, lo, hi):
        a = x.clamp(-0.5, 0.5) + x.clamp(min=0.1) + torch.clamp(x, lo, hi) + torch.clamp_max(x, hi)
        m = torch.logical_and(x > lo, x <= hi) | (x == 0)
        b = torch.where(m, x, torch.zeros_like(x)) + torch.where(x > 0, x, 0.5)
        c = x.masked_fill(~m, -1.0)
        return a, b, c, torch.maximum(x, lo), torch.minimum(x, hi), m, torch.isnan(x)


def get_inputs():
    return [torch.randn(M, N), torch.randn(N) - 1, torch.randn(N) + 1]


def get_init_inputs():
    return []
