"""3-D convolution with per-dim stride and padding (nn.Conv3d)."""

import torch
import torch.nn as nn

BATCH = 1
C_IN = 3
C_OUT = 4
DEPTH = 6
HEIGHT = 7
WIDTH = 5


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv = nn.Conv3d(c_in, c_out, kernel_size=(3, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
