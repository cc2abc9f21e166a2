"""Adaptive average and max pooling with output sizes that do and do not divide the input."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
CHANNELS = 3
HEIGHT = 10
WIDTH = 7


class Model(nn.Module):
    def forward(self, x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = F.adaptive_avg_pool2d(x, (5, 3))
        b = F.adaptive_max_pool2d(x, (4, 7))
        c = F.adaptive_avg_pool3d(v, (2, 3, 2))
        d = F.adaptive_avg_pool1d(x.flatten(2), 6)
        return a, b, c, d


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH), torch.randn(1, CHANNELS, 4, 5, 6)]


def get_init_inputs():
    return []
