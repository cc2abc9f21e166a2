"""A buffer a ``jit`` donates is updated in place, as XLA does (issue 28 item 1).

Note [In-place updates]: ``dynamic_update_slice`` and ``.at[i].set`` of a donated input
hand its buffer to the result through an inplace kernel; only the touched elements are
charged. Without donation XLA must copy: the whole input is read and the result written.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from jax_check import check_fn, rand

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytestmark = pytest.mark.jax

R, C = 16, 8


def _dus(cache: Any, k: Any) -> Any:
    return jax.lax.dynamic_update_slice(cache, k, (7, 0))


def _set_row(x: Any, v: Any) -> Any:
    return x.at[5].set(v)


# name: (function, shapes, fused bytes by hand, inplace kernels)
CASES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]], int, int]] = {
    # read the new row, write it into the donated cache
    "donated_dynamic_update_slice": (partial(jax.jit, donate_argnums=0)(_dus),
                                     [(R, C), (1, C)], 2 * 4 * C, 1),
    # the same without donation: XLA copies the cache (read R x C and the row, write R x C)
    "dynamic_update_slice": (jax.jit(_dus), [(R, C), (1, C)], 2 * 4 * R * C + 4 * C, 0),
    # a scatter's write sits under its bounds check (value-dependent): counted as 0, so
    # only v's read is certain
    "donated_at_set": (partial(jax.jit, donate_argnums=0)(_set_row), [(R, C), (C,)], 4 * C, 1),
}


@pytest.mark.parametrize("case", list(CASES))
def test_donated_buffers_are_updated_in_place(case: str) -> None:
    fn, shapes, fused, inplace = CASES[case]
    lowered = check_fn(fn, *(rand(*s, seed=i) for i, s in enumerate(shapes)))
    assert sum(k.inplace for k in lowered.program.kernels) == inplace
    c = evaluate_costs(lift_to_einsum(lowered.program))
    assert float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()) == fused
