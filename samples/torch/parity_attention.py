"""Parity sample (PyTorch side of samples/jax/parity_attention.py): single-head attention with ops."""

import torch
import torch.nn as nn

B, S, D = 2, 16, 32
SCALE = D**-0.5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wq = nn.Parameter(torch.randn(D, D) * 0.1)
        self.wk = nn.Parameter(torch.randn(D, D) * 0.1)
        self.wv = nn.Parameter(torch.randn(D, D) * 0.1)
        self.wo = nn.Parameter(torch.randn(D, D) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = x @ self.wq.t()
        k = x @ self.wk.t()
        v = x @ self.wv.t()
        s = torch.bmm(q, k.transpose(1, 2)) * SCALE
        m = s.amax(dim=-1, keepdim=True)
        e = torch.exp(s - m)
        p = e / e.sum(dim=-1, keepdim=True)
        o = torch.bmm(p, v)
        return o @ self.wo.t()


def get_inputs():
    return [torch.randn(B, S, D)]


def get_init_inputs():
    return []
