"""Many activation functions in one model."""

import torch
import torch.nn as nn
import torch.nn.functional as F

B = 4
N = 16


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.prelu = nn.PReLU(3)

    def forward(self, x):
        return (
            F.relu(x), F.relu6(4 * x), F.leaky_relu(x, 0.1), F.elu(x, 0.7), F.selu(x), F.celu(x, 0.5),
            F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.mish(x), F.softplus(x, beta=2.0, threshold=3.0),
            F.softsign(x), F.hardsigmoid(3 * x), F.hardswish(3 * x), F.hardtanh(x, -0.5, 0.5), F.logsigmoid(x),
            F.threshold(x, 0.2, -1.0), F.glu(x, dim=-1), torch.sigmoid(x), torch.tanh(x),
            self.prelu(x.view(B, 1, N).expand(B, 3, N).contiguous()),
        )


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []
