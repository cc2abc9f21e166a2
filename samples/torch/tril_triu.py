"""Lower/upper triangles with diagonal offsets and a causal mask built from them."""

import torch
import torch.nn as nn

B = 2
N = 6


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        mask = torch.ones(N, N).tril().bool()
        return x.tril(), x.triu(1), x.tril(-2), x.masked_fill(~mask, float("-inf")).softmax(-1)


def get_inputs():
    return [torch.randn(B, N, N)]


def get_init_inputs():
    return []
