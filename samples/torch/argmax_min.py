"""max/min with indices, amax/amin and argmax/argmin (ties resolve to the first index)."""

import torch
import torch.nn as nn

A = 4
B = 6


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x, t):
        v, i = x.max(1)
        w, j = x.min(0, keepdim=True)
        return v, i, w, j, x.amax(1), x.amin((0, 1)), x.argmax(), x.argmax(1), x.argmin(0, keepdim=True), t.argmax(1)


def get_inputs():
    return [torch.randn(A, B), torch.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])]


def get_init_inputs():
    return []
