"""pixel_shuffle and pixel_unshuffle (nn modules)."""

import torch
import torch.nn as nn

B = 2
C = 3
R = 2
H = 4
W = 5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.PixelShuffle(R)
        self.down = nn.PixelUnshuffle(R)

    def forward(self, x):
        y = self.up(x)
        return y, self.down(y) * 2


def get_inputs():
    return [torch.randn(B, C * R * R, H, W)]


def get_init_inputs():
    return []
