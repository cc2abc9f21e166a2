"""A user-written GRUCell loop: kernels grow with the steps."""
import torch
import torch.nn as nn

SEQ = 128
BATCH = 10
INPUT = 128
HIDDEN = 256


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(INPUT, HIDDEN)

    def forward(self, x):
        h = torch.zeros(x.shape[1], HIDDEN)
        outs = []
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            outs.append(h)
        return torch.stack(outs)


def get_inputs():
    return [torch.randn(SEQ, BATCH, INPUT)]


def get_init_inputs():
    return []
