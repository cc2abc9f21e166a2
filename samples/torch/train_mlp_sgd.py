"""A training step in PyTorch (twin of samples/jax/train_mlp_sgd.py): Linear-ReLU-Linear,
loss = sum(output * target), SGD; `solar analyze samples/torch/train_mlp_sgd.py --train`.

The ReLU is ``where(h > 0, h, 0)``: its backward selects with the saved mask of its input,
as JAX's ``jax.nn.relu`` does (derivative ``select(x > 0, g, 0)``, the mask computed in
the forward). ``torch.relu``'s backward tests its saved output instead
(``threshold_backward``): the same step FLOPs, split differently between the phases.
"""

import torch
import torch.nn as nn

BATCH, IN, HIDDEN, OUT = 32, 64, 128, 10
LR = 1e-3


class Linear(nn.Module):
    """``x W^T + b`` as two ops (``mm``, ``add``), as the jaxpr of the JAX twin has them."""

    def __init__(self, n_in: int, n_out: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in) * 0.1)
        self.bias = nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        return x @ self.weight.t() + self.bias


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = Linear(IN, HIDDEN)
        self.fc2 = Linear(HIDDEN, OUT)

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2(torch.where(h > 0, h, 0.0))


def get_inputs():
    return [torch.randn(BATCH, IN)]


def get_targets():
    return [torch.randn(BATCH, OUT)]


def loss_fn(out, target):
    return (out * target).sum()


def get_optimizer(params):
    return torch.optim.SGD(params, lr=LR)
