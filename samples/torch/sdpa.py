"""Causal scaled-dot-product attention (F.scaled_dot_product_attention, is_causal=True), and
unbatched-head (3-D) attention, which takes the math path (bmm + _safe_softmax)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 16
SEQ = 2048
HEAD_DIM = 64


class Model(nn.Module):
    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        flat = F.scaled_dot_product_attention(q[0], k[0], v[0])  # [HEADS, SEQ, HEAD_DIM]
        return causal, flat


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
