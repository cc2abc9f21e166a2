"""nn.Embedding lookups summed with positional embeddings, and a padding_idx table."""

import torch
import torch.nn as nn

BATCH = 2
SEQ = 7
VOCAB = 20
DIM = 8


class Model(nn.Module):
    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(SEQ, dim)
        self.pad = nn.Embedding(vocab, dim, padding_idx=0)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        return self.tok(ids) + self.pos(pos) + self.pad(ids)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, DIM]
