"""Average pooling in 1-D, 2-D (count_include_pad=False, ceil_mode, divisor_override) and 3-D."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
CHANNELS = 3
LENGTH = 7


class Model(nn.Module):
    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, x3: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        a = F.avg_pool1d(x1, kernel_size=3, stride=2, padding=1)
        b = F.avg_pool2d(x2, kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        c = F.avg_pool2d(x2, kernel_size=(2, 3), divisor_override=4)
        d = F.avg_pool3d(x3, kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1))
        return a, b, c, d


def get_inputs():
    return [
        torch.randn(BATCH, CHANNELS, 2 * LENGTH),
        torch.randn(BATCH, CHANNELS, LENGTH + 2, LENGTH),
        torch.randn(BATCH, CHANNELS, 4, LENGTH - 2, LENGTH - 1),
    ]


def get_init_inputs():
    return []
