"""Sums and means over dims, with keepdim, negative dims, dtype and full reductions."""

import torch
import torch.nn as nn

A = 3
B = 4
C = 5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        return (
            x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(-1), x.mean(),
            x.mean((1, 2), keepdim=True), x.prod(1), x.sum(dtype=torch.float64), (x > 0).sum(-1),
        )


def get_inputs():
    return [torch.randn(A, B, C)]


def get_init_inputs():
    return []
