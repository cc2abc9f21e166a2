"""Depthwise convolution (groups = channels) with a channel multiplier of 2."""

import torch
import torch.nn as nn

BATCH = 2
CHANNELS = 6
HEIGHT = 9
WIDTH = 9


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(c, 2 * c, kernel_size=5, stride=2, padding=2, groups=c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dw(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
