"""Tensor-parallel MLP with functional collectives (Megatron column/row split)."""

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

WORLD_SIZE = 2
B, D, F = 8, 32, 64


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        world = dist.get_world_size()
        self.up = nn.Linear(D, F // world, bias=False)
        self.down = nn.Linear(F // world, D, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.up(x))
        return funcol.all_reduce(self.down(h), "sum", dist.group.WORLD)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, D)]
