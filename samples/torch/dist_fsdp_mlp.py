"""Fully sharded data parallelism with FSDP2 (``fully_shard``): each rank holds a shard
of every parameter, all-gathers a layer's parameters before using it, and
reduce-scatters the gradients in the backward; one training step of a two-layer MLP."""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

WORLD_SIZE = 2
B, D, F = 8, 16, 32


class Model(nn.Module):
    """One training step: forward, loss, backward; returns the loss and the gradient
    shards this rank keeps."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(D, F)
        self.down = nn.Linear(F, D)
        fully_shard(self.up)
        fully_shard(self.down)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        with torch.enable_grad():
            loss = self.down(torch.relu(self.up(x))).square().mean()
            loss.backward()
        return (loss.detach(), *(p.grad.to_local() for p in self.parameters()))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, D) * (1 + dist.get_rank())]
