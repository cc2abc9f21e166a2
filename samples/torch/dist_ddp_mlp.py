"""Data parallelism with DistributedDataParallel: each rank runs one training step of a
two-layer MLP on its own batch, and DDP averages the gradients across the ranks
(its reducer all-reduces them in buckets during the backward)."""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
B, D, F = 8, 16, 32


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(D, F)
        self.down = nn.Linear(F, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


class Model(nn.Module):
    """One training step: forward, loss, backward; returns the loss and the averaged
    gradients (what the optimizer would read)."""

    def __init__(self) -> None:
        super().__init__()
        self.ddp = DDP(MLP())

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        with torch.enable_grad():
            loss = self.ddp(x).square().mean()
            loss.backward()
        return (loss.detach(), *(p.grad for p in self.ddp.parameters()))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, D) * (1 + dist.get_rank())]
