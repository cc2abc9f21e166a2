"""einsum contractions (decomposed at dispatch into permute/view/bmm)."""

import torch
import torch.nn as nn

B = 2
H = 3
S = 5
D = 4


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, q, k, w):
        scores = torch.einsum("bhsd,bhtd->bhst", q, k)
        proj = torch.einsum("bhsd,de->bhse", q, w)
        return scores, proj, torch.einsum("ii->i", w)


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(D, D)]


def get_init_inputs():
    return []
