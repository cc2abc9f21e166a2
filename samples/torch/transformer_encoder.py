"""nn.TransformerEncoderLayer (post-norm, ReLU) and a pre-norm GELU layer, batch-first."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 2048
D_MODEL = 1024
HEADS = 16
FFN = 4096


class Model(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.post = nn.TransformerEncoderLayer(d, heads, ffn, dropout=0.0, batch_first=True)
        self.pre = nn.TransformerEncoderLayer(
            d, heads, ffn, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pre(self.post(x))


def get_inputs():
    return [torch.randn(BATCH, SEQ, D_MODEL)]


def get_init_inputs():
    return [D_MODEL, HEADS, FFN]
