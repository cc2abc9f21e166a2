"""Cross-entropy: class weights + ignore_index, per-pixel (4-D) targets, label smoothing."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4
CLASSES = 5
HEIGHT = 3
WIDTH = 4


class Model(nn.Module):
    def __init__(self, classes: int) -> None:
        super().__init__()
        self.register_buffer("class_weight", torch.rand(classes) + 0.5)

    def forward(
        self, logits: torch.Tensor, target: torch.Tensor, seg: torch.Tensor, seg_target: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = F.cross_entropy(logits, target, weight=self.class_weight, ignore_index=1)
        b = F.cross_entropy(seg, seg_target, reduction="none")
        c = F.cross_entropy(logits, target, label_smoothing=0.1)
        return a, b, c


def get_inputs():
    target = torch.randint(0, CLASSES, (BATCH,))
    target[0] = 2  # at least one target is not ignored
    return [
        torch.randn(BATCH, CLASSES),
        target,
        torch.randn(2, CLASSES, HEIGHT, WIDTH),
        torch.randint(0, CLASSES, (2, HEIGHT, WIDTH)),
    ]


def get_init_inputs():
    return [CLASSES]
