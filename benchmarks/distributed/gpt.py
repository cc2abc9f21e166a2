"""A GPT in plain PyTorch (Megatron-LM's GPT-3 shapes): pre-LayerNorm blocks with fused QKV,
causal attention, a 4h GELU MLP, tied input/output embeddings, bf16 weights.

The defaults are GPT-3 175B (96 layers, hidden 12288, 96 heads, sequence 2048, vocabulary
51200); `--set` picks the other published models (benchmarks/distributed/published.py).
SOLAR captures it on fake tensors: nothing of this size is allocated.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

LAYERS = 96
HIDDEN = 12288
HEADS = 96
SEQ = 2048
BATCH = 1
VOCAB = 51200
DT = {"dtype": torch.bfloat16}  # bf16 weights, built so (no .to(): it cannot run on fake tensors)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN, **DT)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, **DT)
        self.proj = nn.Linear(HIDDEN, HIDDEN, **DT)
        self.ln2 = nn.LayerNorm(HIDDEN, **DT)
        self.fc1 = nn.Linear(HIDDEN, 4 * HIDDEN, **DT)
        self.fc2 = nn.Linear(4 * HIDDEN, HIDDEN, **DT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        # chunk(3) and -1 heads: the same program on one device, and one TP rank's shard
        # (h / tp wide) under torch's tensor parallelism (solar/frontends/pytorch/derive_plan.py)
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, -1, h // HEADS).transpose(1, 2) for t in (q, k, v))
        y = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, -1))
        return x + self.fc2(functional.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN, **DT)
        self.wpe = nn.Embedding(SEQ, HIDDEN, **DT)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN, **DT)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for block in self.layers:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()  # tied output embedding


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_targets():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def loss_fn(logits, target):
    return functional.cross_entropy(logits.float().view(-1, VOCAB), target.view(-1))


def get_optimizer(params):
    return torch.optim.Adam(params, lr=1e-4)
