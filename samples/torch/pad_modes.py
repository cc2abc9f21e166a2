"""F.pad in constant (with cropping), reflect, replicate and (1-D) circular modes."""

import torch
import torch.nn as nn
import torch.nn.functional as F

B = 2
C = 3
H = 5
W = 6


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        return (
            F.pad(x, (1, 2, 0, 3), value=0.5), F.pad(x, (2, -1, -1, 1)), F.pad(x, (2, 1, 1, 2), mode="reflect"),
            F.pad(x, (1, 3, 2, 0), mode="replicate"), F.pad(x[0], (2, 2), mode="reflect"),
            F.pad(x.unsqueeze(0), (1, 1, 1, 1, 1, 1), mode="replicate"), F.pad(x[0], (1, 2), mode="circular"),
        )


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return []
