"""A CNN training step in PyTorch (twin of samples/jax/train_cnn_sgd.py): conv-ReLU,
conv-ReLU, linear head, loss = sum(output * target), SGD;
`solar analyze samples/torch/train_cnn_sgd.py --train`.

Written as the jaxpr of the JAX twin has it, so both frontends bound the same step
(tests/training/test_training_parity.py): convolutions without bias plus a broadcast bias
add, the ReLU as ``where(h > 0, h, 0)`` (its backward selects with the saved input mask,
as ``jax.nn.relu``'s does), the head as ``mm`` plus ``add``. The second convolution has an
input gradient (the adjoint convolution); the first, on the data, does not.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, CHANNELS, SIDE, CLASSES = 4, 8, 8, 10
IN_CHANNELS = 3
LR = 1e-2


class Conv(nn.Module):
    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c_out, c_in, 3, 3) * 0.2)
        self.bias = nn.Parameter(torch.randn(c_out) * 0.1)

    def forward(self, x):
        h = F.conv2d(x, self.weight, padding=1) + self.bias.view(1, -1, 1, 1)
        return torch.where(h > 0, h, 0.0)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = Conv(IN_CHANNELS, CHANNELS)
        self.conv2 = Conv(CHANNELS, CHANNELS)
        self.head_weight = nn.Parameter(torch.randn(CLASSES, CHANNELS * SIDE * SIDE) * 0.02)
        self.head_bias = nn.Parameter(torch.randn(CLASSES) * 0.1)

    def forward(self, x):
        h = self.conv2(self.conv1(x)).reshape(x.shape[0], -1)
        return h @ self.head_weight.t() + self.head_bias


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, SIDE, SIDE)]


def get_targets():
    return [torch.randn(BATCH, CLASSES)]


def loss_fn(out, target):
    return (out * target).sum()


def get_optimizer(params):
    return torch.optim.SGD(params, lr=LR)
