"""Elman RNNs: 2-layer tanh (batch-first), bidirectional ReLU without bias, an RNNCell."""

import torch
import torch.nn as nn

BATCH = 2
SEQ = 5
INPUT = 4
HIDDEN = 6


class Model(nn.Module):
    def __init__(self, inp: int, hidden: int) -> None:
        super().__init__()
        self.tanh_rnn = nn.RNN(inp, hidden, num_layers=2, batch_first=True)
        self.relu_rnn = nn.RNN(inp, hidden, nonlinearity="relu", bias=False, bidirectional=True)
        self.cell = nn.RNNCell(inp, hidden)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, ha = self.tanh_rnn(x)
        b, hb = self.relu_rnn(x.transpose(0, 1))
        return a, ha, b, hb, self.cell(x[:, 0])


def get_inputs():
    return [torch.randn(BATCH, SEQ, INPUT)]


def get_init_inputs():
    return [INPUT, HIDDEN]
