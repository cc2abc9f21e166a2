"""In-place ops on temps, inputs and slices: add_/mul_/relu_/clamp_/copy_/fill_/index_put_."""

import torch
import torch.nn as nn

B = 3
N = 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x, y):
        h = x * 2
        h.add_(1).relu_()
        h[:, 0] = 0.0
        h[:, 1:3].mul_(3)
        out = torch.empty(B, 2 * N)
        out[:, :N].copy_(h)
        out[:, N:] = y
        y.clamp_(min=0)
        return out, y + 1


def get_inputs():
    return [torch.randn(B, N), torch.randn(B, N)]


def get_init_inputs():
    return []
