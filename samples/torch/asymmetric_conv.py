"""Asymmetric kernels, strides and paddings, and padding="same" with an even kernel."""

import torch
import torch.nn as nn

BATCH = 2
CHANNELS = 3
HEIGHT = 11
WIDTH = 8


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.wide = nn.Conv2d(c, 4, kernel_size=(1, 5), stride=(2, 1), padding=(0, 3))
        self.tall = nn.Conv2d(4, 4, kernel_size=(4, 1), padding="same")
        self.big_pad = nn.Conv2d(4, 2, kernel_size=2, padding=(2, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.big_pad(self.tall(self.wide(x)))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
