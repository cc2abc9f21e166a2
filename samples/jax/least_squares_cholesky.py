"""Batched linear least squares through the normal equations and a Cholesky factorisation.

For each of B problems ``min |A x - b|`` (A: [M, D]): ``A^T A + eps I = L L^T``
(``jnp.linalg.cholesky``), then ``L y = A^T b`` and ``L^T x = y``
(``solve_triangular``). Output: the solutions ``[B, D]``.
"""

import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

B, M, D = 4, 16, 5
EPS = 1e-3


def f(A, b):
    AtA = jnp.einsum("bni,bnj->bij", A, A) + EPS * jnp.eye(D)
    Atb = jnp.einsum("bni,bn->bi", A, b)
    L = jnp.linalg.cholesky(AtA)
    y = jsl.solve_triangular(L, Atb[..., None], lower=True)
    x = jsl.solve_triangular(jnp.swapaxes(L, -1, -2), y, lower=False)
    return x[..., 0]


def get_inputs():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((B, M, D), dtype=np.float32)
    return [A, rng.standard_normal((B, M), dtype=np.float32)]
