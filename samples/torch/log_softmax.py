"""log_softmax and softmin."""

import torch
import torch.nn as nn
import torch.nn.functional as F

B = 4
N = 9


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        return F.log_softmax(x, dim=1), F.log_softmax(x, dim=0), F.softmin(x, dim=-1)


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
