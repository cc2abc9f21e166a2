"""KernelBench level-3 style: MobileNetV2 inverted residual block (expand, depthwise, project)."""

import torch
import torch.nn as nn

batch_size = 2
in_channels = 8
out_channels = 8
expand_ratio = 6
height = 10
width = 10


class Model(nn.Module):
    """MobileNetV2 inverted residual: 1x1 expand, 3x3 depthwise, 1x1 project (ReLU6, residual)."""

    def __init__(self, in_channels, out_channels, stride, expand_ratio):
        super().__init__()
        hidden = in_channels * expand_ratio
        self.use_res_connect = stride == 1 and in_channels == out_channels
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, hidden, 1, 1, 0, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, out_channels, 1, 1, 0, bias=False), nn.BatchNorm2d(out_channels))

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 1, expand_ratio]
