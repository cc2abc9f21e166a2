"""nn.MultiheadAttention: batch-first self-attention with weights and a key-padding mask,
and sequence-first cross-attention (different key/value lengths)."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 2048
KV_SEQ = 2048
EMBED = 1024
HEADS = 16


class Model(nn.Module):
    def __init__(self, embed: int, heads: int) -> None:
        super().__init__()
        self.self_attn = nn.MultiheadAttention(embed, heads, batch_first=True)
        self.cross_attn = nn.MultiheadAttention(embed, heads)

    def forward(
        self, x: torch.Tensor, pad: torch.Tensor, mem: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, w = self.self_attn(x, x, x, key_padding_mask=pad)
        xs = y.transpose(0, 1)
        z, _ = self.cross_attn(xs, mem, mem, need_weights=False)
        return y, w, z


def get_inputs():
    pad = torch.zeros(BATCH, SEQ, dtype=torch.bool)
    pad[0, -2:] = True
    return [torch.randn(BATCH, SEQ, EMBED), pad, torch.randn(KV_SEQ, BATCH, EMBED)]


def get_init_inputs():
    return [EMBED, HEADS]
