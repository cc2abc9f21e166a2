"""Cross-platform rows and the inverse roofline."""

from __future__ import annotations

import math

import pytest

from solar.bounds import (
    BOUND_MODELS,
    BoundError,
    Pipe,
    compute_bounds,
    cross_platform,
    inverse_roofline,
    pipe_labels,
)
from solar.hw import Precision, load_hardware_spec

from .conftest import LINEAR_GELU, graph, h100, matmul_text

MM = 2 * 4096**3
MM_BYTES = 3 * 4096**2 * 4


def test_cross_platform_rows() -> None:
    specs = [h100(), load_hardware_spec("A100_SXM_80GB"), load_hardware_spec("TPU_v5e")]
    g = graph(matmul_text())
    rows = cross_platform(g, specs)
    assert [(r.device, r.model) for r in rows] == [
        (s.name, m) for s in specs for m in BOUND_MODELS
    ]
    for r, s in zip(rows[::3], specs, strict=True):
        assert r.time_s == compute_bounds(g, s, model="unfused").time_s
    a100 = next(r for r in rows if r.device == "A100_SXM_80GB" and r.model == "fused")
    # fp32-accurate matmul: 3xTF32 at 156 / 3 = 52 TFLOP/s beats the CUDA cores' 19.5
    assert a100.time_s == pytest.approx(MM / (156e12 / 3))


def test_inverse_roofline_fused() -> None:
    target = 2e-3
    specs = [h100(), load_hardware_spec("A100_SXM_80GB"), load_hardware_spec("B200")]
    inv = inverse_roofline(graph(matmul_text()), target_time_s=target, specs=specs)
    # 201,326,592 B in 2 ms: 100.7 GB/s; 137.4 GFLOP in 2 ms: 68.7 TFLOP/s of fp32 (keyed
    # by the policy's pipe, vector:fp32); each device may meet it by 3xTF32
    assert inv.required_dram_bandwidth_bytes_per_s == pytest.approx(MM_BYTES / target)
    assert inv.required_flops_per_s == {Pipe("vector", Precision.FP32): pytest.approx(MM / target)}
    meets = {d.device: d.meets for d in inv.devices}
    # 3xTF32: H100 494.7 / 3 = 164.9 (0.83 ms), A100 156 / 3 = 52 (2.64 ms), B200 1125 / 3
    assert meets == {"H100_SXM": True, "A100_SXM_80GB": False, "B200": True}


def test_inverse_roofline_unfused_counts_temps_as_on_chip() -> None:
    inv = inverse_roofline(graph(LINEAR_GELU), target_time_s=1.0, model="unfused",
                           precision_policy="tf32")
    # unlimited L2: only X, W, b (cold) and Y (final write) reach DRAM
    assert inv.dram_bytes == (8192 * 1024 * 2 + 8192 + 8192 * 8192) * 4
    assert set(pipe_labels(inv.required_flops_per_s)) == {"tensor:tf32", "vector:fp32"}


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_inverse_roofline_rejects_bad_targets(bad: float) -> None:
    with pytest.raises(BoundError) as e:
        inverse_roofline(graph(matmul_text()), target_time_s=bad)
    assert e.value.code == "E0453"
