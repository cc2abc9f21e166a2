"""1-D transposed convolution (nn.ConvTranspose1d) with stride, padding and dilation."""

import torch
import torch.nn as nn

BATCH = 2
C_IN = 4
C_OUT = 3
LENGTH = 9


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.deconv = nn.ConvTranspose1d(c_in, c_out, kernel_size=4, stride=2, padding=1, dilation=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, LENGTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
