"""2-D convolutions: strided + padded, dilated, grouped, and a padding_mode="reflect" conv."""

import torch
import torch.nn as nn

BATCH = 2
CHANNELS = 4
HEIGHT = 10
WIDTH = 9


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.strided = nn.Conv2d(c, 8, kernel_size=3, stride=2, padding=1)
        self.dilated = nn.Conv2d(8, 8, kernel_size=3, padding=2, dilation=2, groups=2)
        self.reflect = nn.Conv2d(8, 6, kernel_size=3, padding=1, padding_mode="reflect", bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.reflect(self.dilated(self.strided(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
