"""Broadcasting arithmetic with alpha, scalars, division modes, pow and unary math."""

import torch
import torch.nn as nn

M = 6
N = 8


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, a, b, n):
        x = torch.add(a, b, alpha=0.5) - 2.0 * b / (a.abs() + 1)
        y = torch.rsub(x, 1.0) ** 2 + torch.pow(a.abs() + 0.5, b) + torch.pow(2.0, b)
        z = torch.div(a, b.abs() + 1, rounding_mode="floor") + torch.div(a, 3.0, rounding_mode="trunc")
        w = torch.remainder(a, 1.5) + torch.fmod(a, 0.7) + a.exp().log1p() + torch.rsqrt(a.abs() + 1)
        q = torch.lerp(a, b, 0.25) + torch.addcmul(a, a, b, value=0.5) + torch.addcdiv(a, a, b.abs() + 1)
        return x, y, z, w, q, n // 3, n % 4, n * 2 + 1


def get_inputs():
    return [torch.randn(M, N), torch.randn(N), torch.randint(-20, 20, (M, N))]


def get_init_inputs():
    return []
