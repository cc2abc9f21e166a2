"""logsumexp over one and several dims."""

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
        return torch.logsumexp(x, dim=1), torch.logsumexp(x, dim=(0, 2), keepdim=True)


def get_inputs():
    return [torch.randn(A, B, C)]


def get_init_inputs():
    return []
