"""MobileNet blocks: a V2 inverted residual (expand, depthwise, project, ReLU6) and a V3
depthwise-separable block with Hardswish and squeeze-and-excitation."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 32
SIZE = 56


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        hidden = 4 * c
        self.v2 = nn.Sequential(
            nn.Conv2d(c, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, c, 1, bias=False), nn.BatchNorm2d(c),
        )
        self.dw = nn.Conv2d(c, c, 5, stride=2, padding=2, groups=c, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.act = nn.Hardswish()
        self.se = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, c // 4, 1), nn.ReLU(),
            nn.Conv2d(c // 4, c, 1), nn.Hardsigmoid(),
        )
        self.pw = nn.Conv2d(c, 2 * c, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.v2(x)
        y = self.act(self.bn(self.dw(x)))
        return self.pw(y * self.se(y))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS]
