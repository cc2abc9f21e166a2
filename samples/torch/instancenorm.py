"""Instance normalisation (nn.InstanceNorm2d, affine), a batch norm over (N*C) groups."""

import torch
import torch.nn as nn

BATCH = 2
CHANNELS = 3
HEIGHT = 6
WIDTH = 5


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.inorm = nn.InstanceNorm2d(c, affine=True)
        with torch.no_grad():
            self.inorm.weight.copy_(torch.rand(c) + 0.5)
            self.inorm.bias.copy_(torch.randn(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2 - 1]


def get_init_inputs():
    return [CHANNELS]
