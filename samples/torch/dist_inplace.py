"""The in-place torch.distributed API (``dist.all_reduce(t)``, ``dist.broadcast``,
``dist.all_gather_into_tensor``, ``dist.reduce_scatter_tensor``) on two ranks: each call
launches one collective that overwrites its tensor argument."""

import torch
import torch.distributed as dist
from torch import nn

WORLD_SIZE = 2
N, D = 4, 4


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x * 2.0
        dist.all_reduce(y, op=dist.ReduceOp.MAX)
        z = y + 1.0
        dist.broadcast(z, src=1)
        gathered = torch.empty(N * dist.get_world_size(), D)
        dist.all_gather_into_tensor(gathered, z)
        scattered = torch.empty(N // dist.get_world_size(), D)
        dist.reduce_scatter_tensor(scattered, z)
        return gathered, scattered


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, D) * (1 + dist.get_rank())]
