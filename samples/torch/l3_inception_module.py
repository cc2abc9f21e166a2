"""KernelBench level-3 style: GoogLeNet inception module; four branches concatenated on channels."""

import torch
import torch.nn as nn

batch_size = 2
in_channels = 8
height = 8
width = 8


class Model(nn.Module):
    def __init__(self, in_channels, out_1x1, reduce_3x3, out_3x3, reduce_5x5, out_5x5, pool_proj):
        super().__init__()
        self.branch1x1 = nn.Conv2d(in_channels, out_1x1, kernel_size=1)
        self.branch3x3 = nn.Sequential(nn.Conv2d(in_channels, reduce_3x3, kernel_size=1),
                                       nn.Conv2d(reduce_3x3, out_3x3, kernel_size=3, padding=1))
        self.branch5x5 = nn.Sequential(nn.Conv2d(in_channels, reduce_5x5, kernel_size=1),
                                       nn.Conv2d(reduce_5x5, out_5x5, kernel_size=5, padding=2))
        self.branch_pool = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1),
                                         nn.Conv2d(in_channels, pool_proj, kernel_size=1))

    def forward(self, x):
        outputs = [self.branch1x1(x), self.branch3x3(x), self.branch5x5(x), self.branch_pool(x)]
        return torch.cat(outputs, 1)


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, 4, 4, 6, 2, 3, 3]
