"""Local response normalisation (nn.LocalResponseNorm): pad + avg_pool3d over squares."""

import torch
import torch.nn as nn

BATCH = 2
CHANNELS = 7
HEIGHT = 5
WIDTH = 4


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lrn = nn.LocalResponseNorm(size=3, alpha=1e-2, beta=0.75, k=2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lrn(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
