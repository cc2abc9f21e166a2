"""A running (cumulative) maximum written as a custom autograd.Function.

The forward is a hand-written Python loop over the last dimension, which the
tracer cannot lower (it sees an opaque Function). `solar analyze
samples/llm/running_max.py --frontend llm` translates it through the LLM path.
"""

import torch
from torch import nn


class _RunningMax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = torch.empty_like(x)
        running = x[:, 0]
        out[:, 0] = running
        for i in range(1, x.shape[1]):
            running = torch.maximum(running, x[:, i])
            out[:, i] = running
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, out = ctx.saved_tensors
        # The gradient flows to the position that holds the running maximum.
        return grad_out * (x == out)


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, n))

    def forward(self, x):
        return _RunningMax.apply(x * self.scale)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [16]
