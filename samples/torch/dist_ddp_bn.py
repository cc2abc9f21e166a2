"""DistributedDataParallel over a model with BatchNorm: before each forward DDP
broadcasts the module's buffers (running mean, variance, batches tracked) from rank 0
(``broadcast_buffers=True``, the default), then each rank normalises its own batch and
updates its copy of the statistics; the backward all-reduces the gradients. The ranks'
statistics are made to differ first, so the broadcast shows in the outputs."""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
B, D, F = 8, 16, 32


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(D, F)
        self.bn = nn.BatchNorm1d(F)
        self.down = nn.Linear(F, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.bn(self.up(x))))


class Model(nn.Module):
    """One training step; returns the loss, the averaged gradients and the running
    statistics each rank holds after it."""

    def __init__(self) -> None:
        super().__init__()
        self.ddp = DDP(Net())

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        bn = self.ddp.module.bn
        with torch.no_grad():  # a rank's statistics drift from rank 0's (DDP resets them)
            bn.running_mean.add_(1.0 + dist.get_rank())
        with torch.enable_grad():
            loss = self.ddp(x).square().mean()
            loss.backward()
        grads = tuple(p.grad for p in self.ddp.parameters())
        return (loss.detach(), *grads, bn.running_mean.clone(), bn.running_var.clone())


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, D) * (1 + dist.get_rank())]
