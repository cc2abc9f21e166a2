"""Max pooling: ceil_mode with padding and dilation, and a 1-D pool that returns indices."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
CHANNELS = 3
HEIGHT = 11
WIDTH = 10


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=(1, 2), ceil_mode=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y = self.pool(x)
        row = x.flatten(2)
        values, indices = F.max_pool1d(row, kernel_size=4, stride=3, return_indices=True)
        return y, values, indices


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return []
