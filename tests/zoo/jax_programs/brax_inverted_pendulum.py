"""brax: a `lax.scan` of the inverted pendulum environment's step (generalized backend);
the reset state is an input (drawn once, outside the program)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
from brax import envs

STEPS = 4

_ENV = envs.get_environment("inverted_pendulum", backend="generalized")


def f(state, action):
    def step(s, a):
        s = _ENV.step(s, a)
        return s, s.obs

    _, obs = jax.lax.scan(step, state, action)
    return obs


def get_inputs():
    return [_ENV.reset(jax.random.PRNGKey(0)), jnp.zeros((STEPS, 1), jnp.float32)]
