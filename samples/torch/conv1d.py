"""1-D convolution with stride, padding, dilation and groups (nn.Conv1d)."""

import torch
import torch.nn as nn

BATCH = 2
C_IN = 4
C_OUT = 6
LENGTH = 16


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, kernel_size=5, stride=2, padding=3, dilation=2, groups=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, LENGTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
