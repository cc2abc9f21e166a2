"""KernelBench L3-style GRU: 6 layers x 512 steps."""
import torch
import torch.nn as nn

SEQ = 512
BATCH = 10
INPUT = 128
HIDDEN = 256
LAYERS = 6


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=False)
        self.h0 = torch.randn((num_layers, BATCH, hidden_size))

    def forward(self, x):
        self.h0 = self.h0.to(x.device)
        output, h_n = self.gru(x, self.h0)
        return output


def get_inputs():
    return [torch.randn(SEQ, BATCH, INPUT)]


def get_init_inputs():
    return [INPUT, HIDDEN, LAYERS]
