"""A linear Kalman filter over a measurement sequence: ``lax.scan`` with a linear solve.

Constant-velocity tracking in 2-D (state ``[px, py, vx, vy]``, position measurements):
each step predicts (``F P F^T + Q``), forms the innovation covariance ``S = H P H^T + R``,
solves ``S K^T = H P`` with ``jnp.linalg.solve`` (LU with partial pivoting, then two
triangular solves) and updates the state and covariance. Outputs: the filtered states
``[T, 4]`` and the final covariance ``[4, 4]``.
"""

import jax.numpy as jnp
import numpy as np
from jax import lax

T = 12
DT = 0.1
NX, NZ = 4, 2


def f(F, H, Q, R, zs, x0, P0):
    """Filter the measurements ``zs`` [T, 2] from the prior ``(x0, P0)``."""

    def step(carry, z):
        x, P = carry
        x = F @ x
        P = F @ P @ F.T + Q
        S = H @ P @ H.T + R
        K = jnp.linalg.solve(S, H @ P).T
        x = x + K @ (z - H @ x)
        P = (jnp.eye(NX) - K @ H) @ P
        return (x, P), x

    (_, P), xs = lax.scan(step, (x0, P0), zs)
    return xs, P


def get_inputs():
    F = np.eye(NX, dtype=np.float32) + DT * np.eye(NX, k=2, dtype=np.float32)
    H = np.eye(NZ, NX, dtype=np.float32)
    Q = 0.01 * np.eye(NX, dtype=np.float32)
    R = 0.1 * np.eye(NZ, dtype=np.float32)
    zs = np.cumsum(np.random.default_rng(1).standard_normal((T, NZ)), axis=0).astype(np.float32)
    return [F, H, Q, R, zs, np.zeros(NX, np.float32), np.eye(NX, dtype=np.float32)]
