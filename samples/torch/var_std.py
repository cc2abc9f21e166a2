"""Variance and standard deviation with corrections, var_mean and std_mean."""

import torch
import torch.nn as nn

A = 4
B = 9


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        return (
            x.var(), x.var(1), x.std(0, correction=0, keepdim=True), torch.var_mean(x, 1),
            torch.std_mean(x, unbiased=False), x.var(dim=1, correction=2),
        )


def get_inputs():
    return [torch.randn(A, B)]


def get_init_inputs():
    return []
