"""Training step of a small CNN (conv, batch norm, ReLU, max pool, linear head) with SGD
and momentum; `solar analyze samples/torch/train_cnn.py --train`."""

import torch
import torch.nn as nn

BATCH = 8
CHANNELS = 16
SIDE = 16
CLASSES = 10


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, CHANNELS, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(CHANNELS)
        self.conv2 = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1, bias=False)
        self.pool = nn.AvgPool2d(2)
        self.head = nn.Linear(CHANNELS * (SIDE // 2) ** 2, CLASSES)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.head(x.flatten(1))


def get_inputs():
    return [torch.randn(BATCH, 3, SIDE, SIDE)]


def get_targets():
    return [torch.randint(0, CLASSES, (BATCH,))]


def get_loss():
    return nn.CrossEntropyLoss()


def get_optimizer(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)
