"""Batch normalisation with batch statistics (training=True), 1-D, 2-D and without affine."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
CHANNELS = 3
HEIGHT = 5
WIDTH = 6


class Model(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(c) + 0.5)
        self.bias = nn.Parameter(torch.randn(c))
        self.register_buffer("running_mean", torch.zeros(c))
        self.register_buffer("running_var", torch.ones(c))

    def forward(self, x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # training=True normalises with the batch's own statistics (as in model.train())
        y = F.batch_norm(x, self.running_mean.clone(), self.running_var.clone(), self.weight,
                         self.bias, training=True, momentum=0.1, eps=1e-5)
        z = F.batch_norm(v, None, None, training=True, eps=1e-3)
        return y, z


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 2 + 1, torch.randn(BATCH * 2, CHANNELS)]


def get_init_inputs():
    return [CHANNELS]
