"""Batched forward kinematics of a 7-DoF arm (Franka-Panda-like DH parameters).

Each joint contributes the standard Denavit-Hartenberg transform
``Rot_z(theta) Trans_z(d) Trans_x(a) Rot_x(alpha)``; the chain of 4x4 transforms is a
``lax.scan`` over the joints, carrying the accumulated pose and emitting every joint's
position. Outputs: the end-effector pose ``[B, 4, 4]`` and joint positions ``[7, B, 3]``.
"""

import jax.numpy as jnp
import numpy as np
from jax import lax

BATCH = 16
# (a, d, alpha) per joint, metres / radians.
DH = np.array(
    [
        [0.0, 0.333, 0.0],
        [0.0, 0.0, -np.pi / 2],
        [0.0, 0.316, np.pi / 2],
        [0.0825, 0.0, np.pi / 2],
        [-0.0825, 0.384, -np.pi / 2],
        [0.0, 0.0, np.pi / 2],
        [0.088, 0.107, np.pi / 2],
    ],
    dtype=np.float32,
)


def dh_transform(theta, a, d, alpha):
    """The 4x4 DH transform of one joint for a batch of angles ``theta`` [B]."""
    ct, st = jnp.cos(theta), jnp.sin(theta)
    ca, sa = jnp.cos(alpha), jnp.sin(alpha)
    zero, one = jnp.zeros_like(theta), jnp.ones_like(theta)
    rows = [
        [ct, -st * ca, st * sa, a * ct],
        [st, ct * ca, -ct * sa, a * st],
        [zero, sa * one, ca * one, d * one],
        [zero, zero, zero, one],
    ]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)  # [B, 4, 4]


def f(q, base):
    """Forward kinematics: joint angles ``q`` [B, 7] and base poses ``base`` [B, 4, 4]."""

    def joint(pose, xs):
        theta, dh = xs
        t = dh_transform(theta, dh[0], dh[1], dh[2])
        pose = jnp.einsum("bij,bjk->bik", pose, t)
        return pose, pose[:, :3, 3]

    pose, positions = lax.scan(joint, base, (q.T, jnp.asarray(DH)))
    return pose, positions


def get_inputs():
    q = np.random.default_rng(1).uniform(-2.0, 2.0, (BATCH, 7)).astype(np.float32)
    base = np.broadcast_to(np.eye(4, dtype=np.float32), (BATCH, 4, 4)).copy()
    return [q, base]
