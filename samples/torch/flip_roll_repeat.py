"""flip, roll (one and several dims), repeat and tile."""

import torch
import torch.nn as nn

B = 2
C = 3
N = 5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        return x.flip(-1), x.flip(0, 1), x.roll(2, -1), x.roll((1, -2), (1, 2)), x.repeat(2, 1, 3), x.repeat(2, 1, 1, 2), x.tile(2)


def get_inputs():
    return [torch.randn(B, C, N)]


def get_init_inputs():
    return []
