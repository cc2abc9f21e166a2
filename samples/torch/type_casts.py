"""dtype conversions (to, float/half/bfloat16/int/bool) and mixed-type arithmetic."""

import torch
import torch.nn as nn

M = 4
N = 6


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x, n):
        return (
            x.half(), x.to(torch.bfloat16).float(), (x * 10).long(), x.int() + n, (x > 0).float(), x.double() * 2,
            n / 3, n.float().mean(), (n > 0) & (x > 0), x.bool(), n * 0.5,
        )


def get_inputs():
    return [torch.randn(M, N) * 4, torch.randint(-5, 5, (M, N))]


def get_init_inputs():
    return []
