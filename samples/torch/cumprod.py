"""cumprod, logcumsumexp and cummax along different dims."""

import torch
import torch.nn as nn

B = 3
N = 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        v, i = torch.cummax(x, 0)
        return torch.cumprod(x, 1), torch.logcumsumexp(x, 1), v, i


def get_inputs():
    return [torch.rand(B, N) + 0.5]


def get_init_inputs():
    return []
