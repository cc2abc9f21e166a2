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
from solar.ir import elide_masked_work

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytestmark = pytest.mark.jax

R, C = 16, 8


def _dus(cache: Any, k: Any) -> Any:
    return jax.lax.dynamic_update_slice(cache, k, (7, 0))


def _set_row(x: Any, v: Any) -> Any:
    return x.at[5].set(v)


def _set_last(x: Any, v: Any) -> Any:
    return x.at[-1].set(v)


def _add_row(x: Any, v: Any) -> Any:
    return x.at[3].add(v)


def _set_rows(x: Any, v: Any) -> Any:
    return x.at[2:5].set(v)


def _set_at(x: Any, v: Any, i: Any) -> Any:
    return x.at[i[0]].set(v)


_donated = partial(jax.jit, donate_argnums=0)


# name: (function, shapes, fused bytes by hand, inplace kernels)
CASES: dict[str, tuple[Callable[..., Any], list[tuple[int, ...]], int, int]] = {
    # read the new row, write it into the donated cache
    "donated_dynamic_update_slice": (partial(jax.jit, donate_argnums=0)(_dus),
                                     [(R, C), (1, C)], 2 * 4 * C, 1),
    # the same without donation: XLA copies the cache (read R x C and the row, write R x C)
    "dynamic_update_slice": (jax.jit(_dus), [(R, C), (1, C)], 2 * 4 * R * C + 4 * C, 0),
    # Note [Literal scalars]: at a literal index the scatter's bounds check folds to
    # true: read v, write the one row it touches
    "donated_at_set": (_donated(_set_row), [(R, C), (C,)], 2 * 4 * C, 1),
    "donated_at_set_negative_index": (_donated(_set_last), [(R, C), (C,)], 2 * 4 * C, 1),
    # read v and the row, write the row
    "donated_at_add": (_donated(_add_row), [(R, C), (C,)], 3 * 4 * C, 1),
    # three rows read from v, written into x
    "donated_at_set_slice": (_donated(_set_rows), [(R, C), (3, C)], 2 * 4 * 3 * C, 1),
    # without donation: read x and v, write the whole result
    "at_set": (jax.jit(_set_row), [(R, C), (C,)], 2 * 4 * R * C + 4 * C, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_donated_buffers_are_updated_in_place(case: str) -> None:
    fn, shapes, fused, inplace = CASES[case]
    lowered = check_fn(fn, *(rand(*s, seed=i) for i, s in enumerate(shapes)))
    assert sum(k.inplace for k in lowered.program.kernels) == inplace
    c = evaluate_costs(lift_to_einsum(elide_masked_work(lowered.program)))
    assert float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()) == fused


def test_an_index_from_the_data_may_be_out_of_bounds() -> None:
    # x.at[i].set(v) with i an input: XLA drops the update when i is out of range, so the
    # row write sits under a value-dependent bounds check and 0 written is the sound
    # count (v and i read); it stays a whole write neither way
    import numpy as np

    lowered = check_fn(_donated(_set_at), rand(R, C, seed=0), rand(C, seed=1),
                       np.array([3], np.int32))
    c = evaluate_costs(lift_to_einsum(elide_masked_work(lowered.program)))
    assert float(c.compulsory_read_bytes.sum() + c.compulsory_written_bytes.sum()) == 4 * C + 4
