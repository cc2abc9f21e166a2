"""A small mixture-of-experts GPT for the MoE load bounds (docs/distributed.md).

Each block's MLP is ``EXPERTS`` experts (``layers.<i>.experts.<e>``); routing is fixed
and even (expert ``e`` takes the ``e``-th slice of the tokens), so the captured step
holds exactly one top-1 routing's expert work: the per-step loads of ``--moe-load``
are bounded on top of it.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

LAYERS = 2
HIDDEN = 64
HEADS = 4
EXPERTS = 8
SEQ = 64
BATCH = 1
VOCAB = 1024


class Expert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.fc2 = nn.Linear(4 * HIDDEN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(functional.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.experts = nn.ModuleList(Expert() for _ in range(EXPERTS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, HEADS, h // HEADS).transpose(1, 2) for t in (q, k, v))
        y = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, h))
        z = self.ln2(x).reshape(b * s, h)
        part = b * s // EXPERTS
        out = torch.cat([e(z[i * part:(i + 1) * part]) for i, e in enumerate(self.experts)])
        return x + out.reshape(b, s, h)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx)
        for layer in self.layers:
            x = layer(x)
        return self.ln_f(x) @ self.wte.weight.T


def get_inputs() -> list[torch.Tensor]:
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_targets() -> list[torch.Tensor]:
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return functional.cross_entropy(logits.float().view(-1, VOCAB), target.view(-1))


def get_optimizer(params: object) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=1e-4)  # type: ignore[arg-type]
