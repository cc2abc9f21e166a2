"""Training step of an LSTM sequence classifier (embedding, LSTM, linear head) with Adam."""

import torch
import torch.nn as nn

BATCH = 4
SEQ = 12
VOCAB = 50
EMBED = 32
HIDDEN = 48
CLASSES = 5


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.lstm = nn.LSTM(EMBED, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_targets():
    return [torch.randint(0, CLASSES, (BATCH,))]


def loss_fn(out, target):
    return nn.functional.cross_entropy(out, target)


def get_optimizer(params):
    return torch.optim.Adam(params, lr=1e-3)
