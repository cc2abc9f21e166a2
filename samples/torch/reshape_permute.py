"""Views: reshape/view/permute/transpose/expand/squeeze, then copies via contiguous."""

import torch
import torch.nn as nn

B = 2
C = 6
H = 4
W = 4


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        pass

    def forward(self, x):
        y = x.view(B, 2, C // 2, H * W).permute(0, 2, 3, 1).contiguous()
        z = x.transpose(1, 3).reshape(B, W, -1) * 2
        u = x.flatten(2).unsqueeze(1).expand(B, 3, C, H * W).sum(1)
        return y, z, u, x[:, 1:5:2, ::2].squeeze(0) + 1, x.mT.contiguous()


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return []
