"""Uncovered primitives: reported with their byte share, outputs become program inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from jax_check import check_fn, rand

from solar.frontends.jaxfe import lower_jaxpr, trace_function

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytestmark = pytest.mark.jax


def test_sort_is_uncovered_and_program_still_validates() -> None:
    def f(x: Any) -> Any:
        s = jnp.sort(x * 2.0, axis=-1)
        return s[:, :2] + 1.0, x.sum()

    lowered = check_fn(f, rand(4, 8), covered=False)
    (op,) = lowered.coverage
    assert op.target == "sort"
    assert op.count == 1
    assert 0.0 < op.bytes_share < 1.0
    assert "no lowering" in op.reason
    (extra,) = lowered.uncovered_values
    assert extra.name.startswith("u")
    assert extra.name.endswith("_sort")
    roles = {t.name: t.role for t in lowered.program.tensors}
    assert roles[extra.name] == "input"
    assert lowered.ops_seen == lowered.ops_lowered + 1


def test_uncovered_inside_scan_uncovers_the_scan() -> None:
    def f(xs: Any) -> Any:
        return jax.lax.scan(lambda c, x: (c + jnp.sort(x), c), jnp.zeros(3), xs)

    lowered = check_fn(f, rand(4, 3), covered=False)
    assert [u.target for u in lowered.coverage] == ["scan"]
    assert "sort" in lowered.coverage[0].reason


def test_random_ops_are_uncovered_but_downstream_lowered() -> None:
    def f(x: Any, key: Any) -> Any:
        noise = jax.random.normal(jax.random.wrap_key_data(key), x.shape)
        return x + noise

    key = np.asarray(jax.random.key_data(jax.random.key(0)))
    lowered = lower_jaxpr(trace_function(f, (rand(3, 2), key)))
    assert not lowered.fully_covered
    assert lowered.uncovered_share <= 1.0
    kernels = [k.name for k in lowered.program.kernels]
    assert kernels[-1].startswith("add")  # x + noise is still a kernel


def test_effects_free_dead_code_is_skipped() -> None:
    def f(x: Any) -> Any:
        _unused = jnp.sort(x)
        return x * 2.0

    lowered = check_fn(f, rand(5))
    assert lowered.fully_covered
    assert len(lowered.program.kernels) == 1
