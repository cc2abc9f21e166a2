"""Layer normalisation over the last one and last two dims, with and without affine."""

import torch
import torch.nn as nn

BATCH = 3
SEQ = 5
HIDDEN = 8


class Model(nn.Module):
    def __init__(self, hidden: int, seq: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.ln2 = nn.LayerNorm([seq, hidden], elementwise_affine=False, eps=1e-3)
        with torch.no_grad():
            self.ln.weight.copy_(torch.rand(hidden) + 0.5)
            self.ln.bias.copy_(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.ln(x), self.ln2(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN) * 3 + 1]


def get_init_inputs():
    return [HIDDEN, SEQ]
