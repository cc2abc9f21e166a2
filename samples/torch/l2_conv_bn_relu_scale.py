"""KernelBench level-2 style: Conv2d -> BatchNorm2d (eval) -> ReLU -> scale by a Python float."""

import torch
import torch.nn as nn

batch_size = 4
in_channels = 3
out_channels = 8
height, width = 12, 12
kernel_size = 3
scaling_factor = 2.0


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = torch.relu(x)
        x = x * self.scaling_factor
        return x


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scaling_factor]
