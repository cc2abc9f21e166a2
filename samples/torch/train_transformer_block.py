"""Training step of a pre-norm transformer block (attention + GELU MLP) with AdamW; the
loss is the file's own `loss_fn` (mean squared error against a target sequence)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
SEQ = 16
DIM = 64
HEADS = 4


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM, bias=False)  # a key bias has an exactly-zero gradient
        self.proj = nn.Linear(DIM, DIM)
        self.ln2 = nn.LayerNorm(DIM)
        self.fc1 = nn.Linear(DIM, 4 * DIM)
        self.fc2 = nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.view(b, s, HEADS, d // HEADS).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) / (d // HEADS) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_targets():
    return [torch.randn(BATCH, SEQ, DIM)]


def loss_fn(out, target):
    return F.mse_loss(out, target)


def get_optimizer(params):
    return torch.optim.AdamW(params, lr=3e-4, weight_decay=0.1)
