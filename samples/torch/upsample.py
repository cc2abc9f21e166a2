"""Upsampling: nearest (integer and fractional scales), nearest-exact, bilinear with and
without align_corners, bicubic, trilinear, and linear (nn.Upsample / F.interpolate)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 1
CHANNELS = 2
HEIGHT = 5
WIDTH = 6


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x: torch.Tensor, v: torch.Tensor, s: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            self.up(x),
            F.interpolate(x, size=(7, 11), mode="nearest"),
            F.interpolate(x, scale_factor=1.5, mode="nearest-exact"),
            F.interpolate(x, scale_factor=2, mode="bilinear"),
            F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=True),
            F.interpolate(x, size=(8, 13), mode="bicubic"),
            F.interpolate(v, scale_factor=(1, 2, 1.5), mode="trilinear"),
            F.interpolate(s, scale_factor=2.5, mode="linear"),
        )


def get_inputs():
    return [
        torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH),
        torch.randn(BATCH, CHANNELS, 3, 4, 4),
        torch.randn(BATCH, CHANNELS, WIDTH),
    ]


def get_init_inputs():
    return []
