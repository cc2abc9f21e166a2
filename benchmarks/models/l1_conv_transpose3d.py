"""KernelBench L1-style 3-D transposed convolution (stride 2, padding 1)."""
import torch
import torch.nn as nn

BATCH = 4
C_IN = 16
C_OUT = 32
DEPTH = 16
HEIGHT = 32
WIDTH = 32


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(c_in, c_out, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
