# ruff: noqa: E501  (a user program, written as users write them)
from __future__ import annotations

import equinox as eqx
import jax

BATCH = 4
class Net(eqx.Module):
    c1: eqx.nn.Conv2d
    c2: eqx.nn.Conv2d
    pool: eqx.nn.MaxPool2d
    fc: eqx.nn.Linear
    def __init__(self, key):
        k1, k2, k3 = jax.random.split(key, 3)
        self.c1 = eqx.nn.Conv2d(3, 8, 3, padding=1, key=k1)
        self.c2 = eqx.nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2, key=k2)
        self.pool = eqx.nn.MaxPool2d(2, 2)
        self.fc = eqx.nn.Linear(8 * 8 * 8, 10, key=k3)
    def __call__(self, x):
        x = jax.nn.relu(self.c1(x))
        x = jax.nn.relu(self.c2(x))
        x = self.pool(x)
        return self.fc(x.reshape(-1))
def f(model, x):
    return jax.vmap(model)(x)
def get_inputs():
    return [Net(jax.random.PRNGKey(0)), jax.random.normal(jax.random.PRNGKey(1), (BATCH, 3, 16, 16))]
