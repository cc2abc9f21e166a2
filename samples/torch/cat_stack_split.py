"""cat, stack, split/chunk/unbind and narrow."""

import torch
import torch.nn as nn

B = 3
N = 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, a, b):
        c = torch.cat([a, b, a], dim=1)
        s = torch.stack([a, b], dim=1)
        p, q = c.split([5, 19], dim=1)
        h0, h1 = a.chunk(2, dim=-1)
        rows = b.unbind(0)
        return c, s, p * 2, q + 1, h0 - h1, rows[0] + rows[-1], a.narrow(1, 2, 3) * 3


def get_inputs():
    return [torch.randn(B, N), torch.randn(B, N)]


def get_init_inputs():
    return []
