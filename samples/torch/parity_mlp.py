"""Parity sample (PyTorch side of samples/jax/parity_mlp.py): Linear-ReLU-Linear-Tanh-Linear.

Each linear layer is written ``x @ W.t() + b`` (a matmul kernel and a bias-add kernel), the
ops the JAX side's ``einsum`` + add lower to.
"""

import torch
import torch.nn as nn

BATCH, IN, HIDDEN, OUT = 8, 32, 64, 10


class Linear(nn.Module):
    def __init__(self, fin: int, fout: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(fout, fin) * 0.1)
        self.bias = nn.Parameter(torch.randn(fout) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.t() + self.bias


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = Linear(IN, HIDDEN)
        self.fc2 = Linear(HIDDEN, HIDDEN)
        self.fc3 = Linear(HIDDEN, OUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        h = torch.tanh(self.fc2(h))
        return self.fc3(h)


def get_inputs():
    return [torch.randn(BATCH, IN)]


def get_init_inputs():
    return []
