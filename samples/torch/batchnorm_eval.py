"""Batch normalisation with running statistics (nn.BatchNorm2d/1d in eval mode)."""

import torch
import torch.nn as nn

BATCH = 2
CHANNELS = 4
HEIGHT = 6
WIDTH = 5


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.bn2d = nn.BatchNorm2d(c)
        self.bn1d = nn.BatchNorm1d(c, affine=False)
        with torch.no_grad():  # non-trivial running statistics and affine parameters
            for bn in (self.bn2d, self.bn1d):
                bn.running_mean.copy_(torch.randn(c))
                bn.running_var.copy_(torch.rand(c) + 0.5)
            self.bn2d.weight.copy_(torch.rand(c) + 0.5)
            self.bn2d.bias.copy_(torch.randn(c))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.bn2d(x)
        return y, self.bn1d(y.flatten(2))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
