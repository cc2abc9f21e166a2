"""Every functional collective on a 2 x 2 mesh: tensor-parallel groups of two ranks
(all-reduce, all-gather, reduce-scatter, all-to-all, broadcast) and a data-parallel
all-reduce over the whole world."""

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

WORLD_SIZE = 4
TP = 2
N, D = 8, 16


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        rank = dist.get_rank()
        blocks = [list(range(b, b + TP)) for b in range(0, dist.get_world_size(), TP)]
        groups = [dist.new_group(ranks) for ranks in blocks]  # every rank creates every group
        self.tp = next(g for g, ranks in zip(groups, blocks) if rank in ranks)
        self.proj = nn.Linear(D, D, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.proj(x)
        summed = funcol.all_reduce(h, "sum", self.tp)
        gathered = funcol.all_gather_tensor(torch.tanh(summed), 0, self.tp)
        scattered = funcol.reduce_scatter_tensor(gathered * 2.0, "avg", 0, self.tp)
        swapped = funcol.all_to_all_single(scattered + 1.0, None, None, self.tp)
        root = funcol.broadcast(swapped * swapped, 1, self.tp)  # src: a position in the group
        world = funcol.all_reduce(root, "max", dist.group.WORLD)
        return world, gathered


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(N, D) * (1 + dist.get_rank())]
