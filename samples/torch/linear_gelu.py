"""A linear layer on a 3-D input followed by exact and tanh GELU."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
SEQ = 5
IN = 12
OUT = 16


class Model(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)
        self.fc2 = nn.Linear(d_out, d_out, bias=False)

    def forward(self, x):
        h = F.gelu(self.fc(x))
        return F.gelu(self.fc2(h), approximate="tanh")


def get_inputs():
    return [torch.randn(BATCH, SEQ, IN)]


def get_init_inputs():
    return [IN, OUT]
