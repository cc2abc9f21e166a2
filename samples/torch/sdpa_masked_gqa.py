"""SDPA with a boolean mask, an additive mask, a custom scale and grouped-query attention."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
Q_HEADS = 4
KV_HEADS = 2
Q_LEN = 5
KV_LEN = 7
HEAD_DIM = 8


class Model(nn.Module):
    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, keep: torch.Tensor, bias: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        kr = k.repeat_interleave(Q_HEADS // KV_HEADS, dim=1)
        vr = v.repeat_interleave(Q_HEADS // KV_HEADS, dim=1)
        masked = F.scaled_dot_product_attention(q, kr, vr, attn_mask=keep)
        biased = F.scaled_dot_product_attention(q, kr, vr, attn_mask=bias, scale=0.2)
        gqa = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return masked, biased, gqa


def get_inputs():
    keep = torch.rand(Q_LEN, KV_LEN) > 0.3
    keep[:, 0] = True  # every query keeps at least one key
    return [
        torch.randn(BATCH, Q_HEADS, Q_LEN, HEAD_DIM),
        torch.randn(BATCH, KV_HEADS, KV_LEN, HEAD_DIM),
        torch.randn(BATCH, KV_HEADS, KV_LEN, HEAD_DIM),
        keep,
        torch.randn(BATCH, 1, Q_LEN, KV_LEN),
    ]


def get_init_inputs():
    return []
