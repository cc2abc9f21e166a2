"""Tensor-parallel MLP with DTensor: ``parallelize_module`` splits the up projection by
columns and the down projection by rows (Megatron), so the forward ends in one
all-reduce that DTensor inserts itself."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    parallelize_module,
)

WORLD_SIZE = 2
B, D, F = 8, 32, 64


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(D, F, bias=False)
        self.down = nn.Linear(F, D, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        self.mlp = parallelize_module(
            Mlp(), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()}
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, D)]
