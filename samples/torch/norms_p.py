"""Vector norms: p = 1, 2, inf, -inf, 0, fro and a general p, full and per-dim."""

import torch
import torch.nn as nn
import torch.nn.functional as F

A = 5
B = 6


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        lin = torch.linalg.vector_norm
        return (
            x.norm(), x.norm(p=1, dim=1), lin(x, float("inf"), dim=0), lin(x, float("-inf")),
            lin(x, 0), x.norm(p="fro"), lin(x, 3.0, dim=1, keepdim=True), F.normalize(x, dim=1),
        )


def get_inputs():
    return [torch.randn(A, B)]


def get_init_inputs():
    return []
