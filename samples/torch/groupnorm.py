"""Group normalisation (nn.GroupNorm) on a 4-D and a 3-D input."""

import torch
import torch.nn as nn

BATCH = 2
CHANNELS = 6
HEIGHT = 4
WIDTH = 5


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(3, c)
        self.gn1 = nn.GroupNorm(2, c, affine=False)
        with torch.no_grad():
            self.gn.weight.copy_(torch.rand(c) + 0.5)
            self.gn.bias.copy_(torch.randn(c))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.gn(x), self.gn1(x.flatten(2))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS]
