"""A model wrapped in DistributedDataParallel, analysed as a training step with
``--train``: SOLAR's step runs ``loss.backward()`` for a DDP model so that DDP's gradient
all-reduces fire (one per parameter), then the optimizer update; each rank has its own
batch."""

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

WORLD_SIZE = 2
B, D, H, C = 4, 16, 32, 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ddp = DistributedDataParallel(
            nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, C))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ddp(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(B, D) + dist.get_rank()]
