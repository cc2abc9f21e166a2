"""Rank-dependent literals: each of three ranks takes its own rows of a shared batch
(``x[rank * R:(rank + 1) * R]``), adds a rank-dependent bias (``torch.full(..., rank)``)
and scales by ``1 + rank / 2``, then the ranks gather their rows. The per-rank programs
differ only in numbers that are affine in ``rank``, so they merge into one program of
``rank`` (docs/distributed.md, "Merging the ranks")."""

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

WORLD_SIZE = 3
R, C = 4, 8


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rank = dist.get_rank()
        rows = x[rank * R : (rank + 1) * R]
        shifted = torch.relu(rows) + torch.full((R, C), float(rank))
        scaled = shifted * (1.0 + rank / 2)
        return funcol.all_gather_single(scaled, 0, dist.group.WORLD)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(WORLD_SIZE * R, C)]
