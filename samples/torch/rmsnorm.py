"""RMS normalisation (nn.RMSNorm, decomposed by torch into pow/mean/rsqrt/mul)."""

import torch
import torch.nn as nn

BATCH = 2
SEQ = 6
HIDDEN = 16


class Model(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=1e-6)
        with torch.no_grad():
            self.norm.weight.copy_(torch.rand(hidden) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
