"""gather, scatter (src, value, add, reduce), index_put and index_add."""

import torch
import torch.nn as nn

B = 4
N = 6


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x, src, idx):
        g = torch.gather(x, 1, idx)
        s1 = x.scatter(1, idx, src)
        s2 = x.scatter_add(1, idx, src)
        s3 = x.scatter_reduce(1, idx, src, reduce="amax")
        s4 = torch.zeros(B, N).scatter_(1, idx, 1.0)
        acc = x.index_put((idx[:, 0],), src[:, 0].unsqueeze(1).expand(B, N), accumulate=True)
        add = x.index_add(0, idx[:, 1], src.repeat(1, 2)[:, :N])
        return g, s1, s2, s3, s4, acc, add


def get_inputs():
    return [torch.randn(B, N), torch.randn(B, 3), torch.randint(0, 4, (B, 3))]


def get_init_inputs():
    return []
