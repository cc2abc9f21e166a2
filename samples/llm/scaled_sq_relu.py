"""A linear layer followed by a `torch.library` custom op, a fused "scaled squared ReLU".

The custom op has only a Python implementation (and a fake for tracing), so the
tracer sees an opaque call. `solar analyze samples/llm/scaled_sq_relu.py
--frontend llm` translates the whole program through the LLM path.
"""

import torch
from torch import nn


@torch.library.custom_op("solar_samples::scaled_sq_relu", mutates_args=())
def scaled_sq_relu(x: torch.Tensor, scale: float) -> torch.Tensor:
    r = torch.relu(x)
    return scale * r * r


@scaled_sq_relu.register_fake
def _(x, scale):
    return torch.empty_like(x)


class Model(nn.Module):
    def __init__(self, k, n, scale):
        super().__init__()
        self.fc = nn.Linear(k, n)
        self.scale = scale

    def forward(self, x):
        return scaled_sq_relu(self.fc(x), self.scale)


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 16, 0.5]
