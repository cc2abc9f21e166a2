"""Sampling-based MPC (MPPI) rollout of a cart-pole: ``lax.scan`` over the horizon.

K candidate control sequences are rolled out through the nonlinear cart-pole dynamics
(explicit Euler), accumulating a quadratic state/control cost; the candidates are then
weighted by ``softmax(-cost / lambda)`` and averaged into the next control sequence.
Outputs: per-candidate costs ``[K]``, the state trajectories ``[T, K, 4]`` and the
updated control sequence ``[T]``.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

K, T = 32, 20
DT = 0.05
GRAVITY, M_CART, M_POLE, LENGTH = 9.81, 1.0, 0.1, 0.5
Q = np.array([1.0, 0.1, 10.0, 0.1], dtype=np.float32)  # state cost weights
R = 0.01  # control cost weight
LAMBDA = 1.0


def dynamics(state, u):
    """One Euler step of the cart-pole; ``state`` [K, 4] = (x, x_dot, theta, theta_dot)."""
    x, x_dot, th, th_dot = state[:, 0], state[:, 1], state[:, 2], state[:, 3]
    sin, cos = jnp.sin(th), jnp.cos(th)
    total = M_CART + M_POLE
    temp = (u + M_POLE * LENGTH * th_dot**2 * sin) / total
    th_acc = (GRAVITY * sin - cos * temp) / (
        LENGTH * (4.0 / 3.0 - M_POLE * cos**2 / total)
    )
    x_acc = temp - M_POLE * LENGTH * th_acc * cos / total
    deriv = jnp.stack([x_dot, x_acc, th_dot, th_acc], axis=1)
    return state + DT * deriv


def f(x0, controls):
    """Roll out ``controls`` [K, T] from the initial state ``x0`` [4]."""

    def step(carry, u):
        state, cost = carry
        nxt = dynamics(state, u)
        cost = cost + jnp.sum(nxt * nxt * jnp.asarray(Q), axis=1) + R * u * u
        return (nxt, cost), nxt

    init = (jnp.broadcast_to(x0, (K, 4)), jnp.zeros((K,), jnp.float32))
    (_, costs), traj = lax.scan(step, init, controls.T)
    weights = jax.nn.softmax(-(costs - jnp.min(costs)) / LAMBDA)
    new_controls = jnp.einsum("k,kt->t", weights, controls)
    return costs, traj, new_controls


def get_inputs():
    x0 = np.array([0.0, 0.0, 0.2, 0.0], dtype=np.float32)
    controls = np.random.default_rng(1).standard_normal((K, T), dtype=np.float32) * 2.0
    return [x0, controls]
