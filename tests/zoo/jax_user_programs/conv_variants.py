# ruff: noqa: E501, E731  (a user program, written as users write them)
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def f(x, wdw, wd, ws):
    dn = ("NHWC", "HWIO", "NHWC")
    a = lax.conv_general_dilated(x, wdw, (1, 1), "SAME", dimension_numbers=dn, feature_group_count=8)
    b = lax.conv_general_dilated(x, wd, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=dn)
    c = lax.conv_general_dilated(x, ws, (2, 2), ((1, 0), (0, 1)), dimension_numbers=dn, feature_group_count=2)
    d = lax.conv_transpose(x, wd, (2, 2), "SAME", dimension_numbers=dn)
    e = lax.conv_general_dilated(jnp.transpose(x, (0, 3, 1, 2)), jnp.transpose(wd, (3, 2, 0, 1)), (1, 1), "VALID")
    return a, b, c, d, e
def get_inputs():
    r = lambda i, s: jax.random.normal(jax.random.PRNGKey(i), s)
    return [r(0, (2, 12, 12, 8)), r(1, (3, 3, 1, 8)), r(2, (3, 3, 8, 4)), r(3, (3, 3, 4, 6))]
