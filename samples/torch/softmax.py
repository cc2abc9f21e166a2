"""softmax over the last and a middle dim, and a half-to-float softmax."""

import torch
import torch.nn as nn
import torch.nn.functional as F

B = 2
H = 3
N = 7


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        return F.softmax(x, dim=-1), F.softmax(x, dim=1), F.softmax(x.half(), dim=-1, dtype=torch.float32)


def get_inputs():
    return [torch.randn(B, H, N)]


def get_init_inputs():
    return []
