"""A module written without SOLAR in mind: no `Model`, no `get_inputs`.

    solar analyze examples/tinynet.py --entry TinyNet --input-shape x=2,8
    solar analyze examples/tinynet.py --entry TinyNet --inputs inputs.pt   # {"x": ..., "scale": ...}
    PYTHONPATH=examples solar analyze --entry tinynet:TinyNet --input-shape x=2,8
    solar analyze examples/tinynet.py --entry matmul --input-shape 4,8 --input-shape 8,3
"""

import dataclasses

import torch
from torch import nn


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    stats: dict


class TinyNet(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.fc = nn.Linear(8, width)

    def forward(self, x, scale=None):
        y = torch.relu(self.fc(x))
        if scale is not None:
            y = y * scale
        return Output(y, {"mean": y.mean()})


def matmul(a, b):
    return a @ b
