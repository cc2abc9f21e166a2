"""3-D transposed convolution (nn.ConvTranspose3d), stride 2 with output_padding."""

import torch
import torch.nn as nn

BATCH = 1
C_IN = 3
C_OUT = 2
DEPTH = 3
HEIGHT = 4
WIDTH = 3


class Model(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.deconv = nn.ConvTranspose3d(
            c_in, c_out, kernel_size=(2, 3, 3), stride=2, padding=(0, 1, 1), output_padding=(1, 0, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, C_IN, DEPTH, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C_IN, C_OUT]
