"""A 2-layer bidirectional LSTM (batch-first) with initial states."""

import torch
import torch.nn as nn

BATCH = 2
SEQ = 5
INPUT = 4
HIDDEN = 6
LAYERS = 2


class Model(nn.Module):
    def __init__(self, inp: int, hidden: int, layers: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(inp, hidden, layers, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


def get_inputs():
    return [
        torch.randn(BATCH, SEQ, INPUT),
        torch.randn(2 * LAYERS, BATCH, HIDDEN),
        torch.randn(2 * LAYERS, BATCH, HIDDEN),
    ]


def get_init_inputs():
    return [INPUT, HIDDEN, LAYERS]
