"""A 2-layer bidirectional GRU (sequence-first), plus a GRUCell step."""

import torch
import torch.nn as nn

BATCH = 3
SEQ = 4
INPUT = 5
HIDDEN = 6


class Model(nn.Module):
    def __init__(self, inp: int, hidden: int) -> None:
        super().__init__()
        self.gru = nn.GRU(inp, hidden, num_layers=2, bidirectional=True)
        self.cell = nn.GRUCell(inp, hidden)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, h = self.gru(x)
        return y, h, self.cell(x[0])


def get_inputs():
    return [torch.randn(SEQ, BATCH, INPUT)]


def get_init_inputs():
    return [INPUT, HIDDEN]
