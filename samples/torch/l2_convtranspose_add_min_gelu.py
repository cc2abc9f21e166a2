"""KernelBench level-2 style: ConvTranspose2d -> add -> min with a 0-d tensor -> GELU -> multiply.

`torch.tensor(0.0, device=x.device)` in the forward makes the capture fall back from the
meta device to FakeTensors (Note [Meta capture]).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 2
in_channels = 4
out_channels = 6
height, width = 8, 8
kernel_size = 4
stride = 2
add_value = 0.5
multiply_value = 2.0


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, add_value, multiply_value):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride)
        self.add_value = add_value
        self.multiply_value = multiply_value

    def forward(self, x):
        x = self.conv_transpose(x)
        x = x + self.add_value
        x = torch.min(x, torch.tensor(0.0, device=x.device))
        x = F.gelu(x)
        x = x * self.multiply_value
        return x


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, add_value, multiply_value]
