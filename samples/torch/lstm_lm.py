"""An LSTM language model: token embedding, 2-layer LSTM, linear head over the vocabulary."""

import torch
import torch.nn as nn

BATCH = 2
SEQ = 6
VOCAB = 20
EMBED = 8
HIDDEN = 12


class Model(nn.Module):
    def __init__(self, vocab: int, embed: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.embed(tokens))
        return self.head(h)


def get_inputs():
    return [torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return [VOCAB, EMBED, HIDDEN]
