"""index_select, advanced indexing with index tensors, and take_along_dim."""

import torch
import torch.nn as nn

A = 5
B = 6
C = 4


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x, i, j):
        return x.index_select(1, i), x[i], x[:, i, j], x[i, :, j], x[..., j], torch.take_along_dim(x, j.view(1, 1, -1), dim=2)


def get_inputs():
    return [torch.randn(A, B, C), torch.tensor([4, 0, 2]), torch.tensor([1, 3, 0])]


def get_init_inputs():
    return []
