"""2-D transposed convolution with output_padding and groups (nn.ConvTranspose2d)."""

import torch
import torch.nn as nn

BATCH = 2
C_IN = 4
C_OUT = 6
HEIGHT = 5
WIDTH = 6


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.deconv = nn.ConvTranspose2d(
            c_in, c_out, kernel_size=3, stride=2, padding=1, output_padding=1, groups=2
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
