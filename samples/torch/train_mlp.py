import torch
import torch.nn as nn

BATCH = 32
D_IN = 64
HIDDEN = 128
CLASSES = 10


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(D_IN, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def get_inputs():
    return [torch.randn(BATCH, D_IN)]


def get_targets():
    return [torch.randint(0, CLASSES, (BATCH,))]


def loss_fn(out, target):
    return nn.functional.cross_entropy(out, target)


def get_optimizer(params):
    return torch.optim.AdamW(params, lr=1e-3)
