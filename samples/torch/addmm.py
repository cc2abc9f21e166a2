"""addmm / baddbmm / addmv with alpha and beta, and a dot product."""

import torch
import torch.nn as nn

M = 6
K = 10
N = 7


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, c, a, b, v):
        return (
            torch.addmm(c, a, b, beta=0.5, alpha=2.0),
            torch.baddbmm(c.expand(2, M, N), a.expand(2, M, K), b.expand(2, K, N), beta=0.0),
            torch.addmv(c[:, 0], a, v, alpha=3.0),
            torch.dot(v, v),
        )


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, K), torch.randn(K, N), torch.randn(K)]


def get_init_inputs():
    return []
