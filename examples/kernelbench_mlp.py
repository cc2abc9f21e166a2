"""A model file in the KernelBench convention: `Model`, `get_inputs`, `get_init_inputs`.

    solar analyze examples/kernelbench_mlp.py
    solar analyze examples/kernelbench_mlp.py --set BATCH=64   # rebind a size constant
"""

import torch
from torch import nn

BATCH = 8  # module-level integer constants are the sizes `--set` rebinds
DIM = 256


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def get_init_inputs():
    return [DIM]  # Model(*get_init_inputs())


def get_inputs():
    return [torch.randn(BATCH, DIM)]  # model(*get_inputs())
