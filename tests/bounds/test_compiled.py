"""Compiled costs, bound sets, the shared roofline helpers and the error hierarchy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solar.bounds import (
    BOUND_MODELS,
    BoundError,
    compile_costs,
    compute_bound_set,
    compute_bounds,
    fused_bound,
    memory_time_s,
    unfused_bound,
)
from solar.bounds.roofline import arithmetic_intensity
from solar.diagnostics import HardwareSpecError, SolarError

from .conftest import ADD, LINEAR_GELU, SOFTMAX, graph, h100, matmul_text

COPY = """solar-ir 1
program copy
size N = 1024
input X : f32[N]
output Y : f32[N]
kernel cp { for i in 0 .. N { Y[i] = X[i] } }
"""


@pytest.mark.parametrize("text", [ADD, LINEAR_GELU, SOFTMAX, matmul_text("bf16")])
@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_bound_set_equals_one_model_at_a_time(text: str, cache: str) -> None:
    g = graph(text)
    compiled = compile_costs(g)
    sizes = dict(g.size_env())
    both = compute_bound_set(compiled, h100(), sizes=sizes, cache=cache)  # type: ignore[arg-type]
    one = tuple(compute_bounds(g, h100(), model=m, sizes=sizes, cache=cache)  # type: ignore[arg-type]
                for m in BOUND_MODELS)
    assert both == one
    assert [b.model for b in both] == list(BOUND_MODELS)


@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_the_per_binding_memo_changes_no_bound(cache: str) -> None:
    """Note [Per-binding memo]: alternating bindings on one compiled graph (as a sweep
    does) give the bounds a fresh compile gives, and the shared arrays are read-only."""
    g = graph(matmul_text("bf16"))
    shared = compile_costs(g)
    for m in (64, 4096, 64, 128, 128):
        sizes = dict(g.size_env({"M": m}))
        again = compute_bound_set(shared, h100(), sizes=sizes, cache=cache)  # type: ignore[arg-type]
        fresh = compute_bound_set(compile_costs(g), h100(), sizes=sizes, cache=cache)  # type: ignore[arg-type]
        assert [(b.model, b.time_s, b.flops, b.dram_bytes) for b in again] == [
            (b.model, b.time_s, b.flops, b.dram_bytes) for b in fresh
        ]
        assert again[0].flops == 2 * m * 4096 * 4096
    arrays = shared.evaluate(dict(g.size_env({"M": 64})))
    with pytest.raises(ValueError, match="read-only"):
        arrays.group_flops[0] = 0.0


def test_bound_set_keeps_the_requested_order() -> None:
    bounds = compute_bound_set(graph(LINEAR_GELU), h100(), models=("cache-aware", "unfused"))
    assert [b.model for b in bounds] == ["cache-aware", "unfused"]


def test_bounds_never_write_into_the_graph() -> None:
    g = graph(LINEAR_GELU)
    before = repr(g)
    compiled = compile_costs(g)
    compute_bound_set(compiled, h100())
    assert repr(g) == before
    assert not hasattr(g, "memo")
    assert compiled.graph is g
    again = compile_costs(g).evaluate()
    assert np.array_equal(again.group_flops, compiled.evaluate().group_flops)


def test_unfused_rejects_a_foreign_fused_floor() -> None:
    compiled = compile_costs(graph(LINEAR_GELU))
    other = fused_bound(compiled, h100(), precision_policy="tf32")
    with pytest.raises(ValueError, match="fused bound"):
        unfused_bound(compiled, h100(), fused=other)
    same = fused_bound(compiled, h100())
    assert unfused_bound(compiled, h100(), fused=same) == unfused_bound(compiled, h100())


def test_kernel_without_flops_has_no_pipe() -> None:
    b = compute_bounds(graph(COPY), h100(), model="unfused")
    (k,) = b.kernels
    assert (k.work_class, k.pipe, k.flops, k.bottleneck) == ("vector", None, 0.0, "memory")


def test_memory_time_is_the_slower_of_dram_and_l2() -> None:
    spec = h100()  # 3.35 TB/s DRAM, 12 TB/s L2
    assert memory_time_s(spec, 3.35e12, 6e12) == pytest.approx(1.0)
    assert memory_time_s(spec, 0.0, 24e12) == pytest.approx(2.0)
    times = memory_time_s(spec, np.array([3.35e12, 0.0]), np.array([0.0, 24e12]))
    assert times == pytest.approx([1.0, 2.0])
    no_l2_bw = spec.model_copy(update={"l2_bandwidth_bytes_per_s": None})
    assert memory_time_s(no_l2_bw, 0.0, 1e15) == 0.0  # unknown L2 bandwidth: free


def test_arithmetic_intensity_conventions() -> None:
    assert arithmetic_intensity(8.0, 2.0) == 4.0
    assert arithmetic_intensity(8.0, 0.0) == 0.0  # the report's convention
    assert arithmetic_intensity(8.0, 0.0, if_none_moved=math.inf) == math.inf
    warm = compute_bounds(graph(COPY), h100(), model="fused")  # all of it fits in L2
    assert warm.dram_bytes == 0.0
    assert warm.arithmetic_intensity == math.inf


def test_bound_error_is_its_own_configuration_error() -> None:
    assert issubclass(BoundError, SolarError)
    assert not issubclass(BoundError, HardwareSpecError)
    assert BoundError.exit_code == 2
    with pytest.raises(BoundError) as e:
        compute_bounds(graph(ADD), h100(), model="fused", cache="lukewarm")  # type: ignore[arg-type]
    assert e.value.code == "E0454"
