"""A stiff, chaotic contact rollout: BALLS balls in a unit box with penalty
spring-damper contacts against the walls and each other (`jnp.where` on the
penetration), explicit Euler, a `lax.scan` of STEPS steps; the output is every ball's
position at every step. Collisions amplify a perturbation about 10^7-fold over 100
steps (a 1e-12 change of the float64 inputs grows to 1e-5), so fp32 rounding reaches
0.04 there while 20 steps stay near 1e-6 (issue 29, item 6)."""
from __future__ import annotations

import jax
import jax.numpy as jnp

BALLS = 36
STEPS = 100
DT = 1e-3
K, C = 1e5, 5.0
RADIUS = 0.07


def f(pos, vel):
    def step(carry, _):
        p, v = carry
        lo, hi = RADIUS - p, p - (1.0 - RADIUS)
        wall = jnp.where(lo > 0, K * lo - C * v, 0.0) - jnp.where(hi > 0, K * hi + C * v, 0.0)
        d = p[:, None, :] - p[None, :, :]
        dist = jnp.sqrt(jnp.sum(d * d, axis=-1) + 1e-12)
        overlap = 2 * RADIUS - dist
        push = jnp.where((overlap > 0) & (dist > 1e-6), K * overlap / dist, 0.0)
        force = jnp.sum(push[:, :, None] * d, axis=1) + wall
        v = v + DT * force
        p = p + DT * v
        return (p, v), p

    _, path = jax.lax.scan(step, (pos, vel), None, length=STEPS)
    return path


def get_inputs():
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    g = jnp.linspace(0.1, 0.9, 6)
    grid = jnp.stack(jnp.meshgrid(g, g), axis=-1).reshape(-1, 2)
    pos = grid + 0.01 * jax.random.uniform(k1, (BALLS, 2))
    vel = 15.0 * jax.random.normal(k2, (BALLS, 2))
    return [pos.astype(jnp.float32), vel.astype(jnp.float32)]
