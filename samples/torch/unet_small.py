"""A two-level U-Net: conv blocks, max-pool downsampling, transposed-conv and bilinear
upsampling, skip connections by concatenation."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
CHANNELS = 3
SIZE = 256


def block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1), nn.ReLU(inplace=True),
    )


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.enc1, self.enc2, self.mid = block(c, 4), block(4, 8), block(8, 16)
        self.up2 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.dec2 = block(16, 8)
        self.dec1 = block(8 + 4, 4)
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        m = self.mid(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        up1 = F.interpolate(d2, scale_factor=2, mode="bilinear", align_corners=False)
        d1 = self.dec1(torch.cat([up1, e1], dim=1))
        return self.head(d1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS]
