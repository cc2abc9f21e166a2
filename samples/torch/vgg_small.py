"""A small VGG: conv-ReLU stacks, max pooling, adaptive average pooling, classifier."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 3
SIZE = 224
CLASSES = 1000


class Model(nn.Module):
    def __init__(self, c: int, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(c, 8, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
        )
        self.pool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 2 * 2, 32), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(32, classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, SIZE, SIZE)]


def get_init_inputs():
    return [CHANNELS, CLASSES]
