"""Report rows built from typed bound values (solar.report.rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.bounds import compute_bound_set, compute_bounds, pipe_labels
from solar.einsum import EinsumGraph, lift_to_einsum
from solar.hw import Precision, load_hardware_spec
from solar.ir import parse_program
from solar.pipeline import AnalyzeOptions, analyze
from solar.report import (
    Measurement,
    build_arch_bounds,
    build_bound_result,
    build_kernel_row,
    render_text,
)

MATMUL_THEN_COPY = """solar-ir 1
program mm_copy
size N = 256
input A : f32[N, N]
input B : f32[N, N]
temp C : f32[N, N]
output D : f32[N, N]
kernel mm { for i in 0 .. N { for j in 0 .. N { C[i, j] = 0.0
  for k in 0 .. N { C[i, j] += A[i, k] * B[k, j] } } } }
kernel cp { for i in 0 .. N { for j in 0 .. N { D[i, j] = C[i, j] } } }
"""


def _graph() -> EinsumGraph:
    return lift_to_einsum(parse_program(MATMUL_THEN_COPY))


def test_kernel_rows_name_the_busiest_pipe() -> None:
    b = compute_bounds(_graph(), load_hardware_spec("H100_SXM"), model="unfused",
                       precision_policy="tf32")
    mm, cp = (build_kernel_row(k) for k in b.kernels)
    assert (mm.unit, mm.precision) == ("tensor", "tf32")
    assert mm.arithmetic_intensity_flops_per_byte == pytest.approx(mm.flops / mm.bytes)
    # no FLOPs: the kernel's work class and `-`
    assert (cp.unit, cp.precision, cp.flops) == ("vector", "-", 0.0)
    assert cp.arithmetic_intensity_flops_per_byte == 0.0


def test_bound_rows_use_l2_bytes_without_dram_traffic() -> None:
    spec = load_hardware_spec("H100_SXM")  # 50 MiB L2: a warm start holds all of it
    fused = compute_bounds(_graph(), spec, model="fused")
    assert fused.dram_bytes == 0.0 and fused.l2_bytes > 0
    row = build_bound_result(fused)
    assert row.arithmetic_intensity_flops_per_byte == pytest.approx(fused.flops / fused.l2_bytes)
    assert row.compute_time_s_by_unit == pipe_labels(fused.compute_time_s_by_pipe)


def test_arch_row_roofs_cache_and_headroom() -> None:
    spec = load_hardware_spec("H100_SXM")
    bounds = compute_bound_set(_graph(), spec, cache="cold")
    measured = Measurement(source="user", median_ms=1e-6, arch="h100_sxm")
    row = build_arch_bounds(spec, bounds, precision_policy="default", cache="cold",
                            measurement=measured)
    assert [b.model for b in row.bounds] == ["unfused", "fused", "cache-aware"]
    assert row.peak_flops_per_s["tensor:bf16"] == spec.tensor_flops_per_s[Precision.BF16]
    assert row.peak_flops_per_s["vector:fp32"] == spec.vector_flops_per_s[Precision.FP32]
    assert list(row.peak_flops_per_s) == sorted(row.peak_flops_per_s)
    assert row.cache_assumption.startswith("cold: ")
    assert len(row.kernels) == 2
    assert all(h.violation == (h.model != "unfused") for h in row.headroom)
    other = Measurement(source="user", median_ms=1.0, arch="B200")
    assert build_arch_bounds(spec, bounds, precision_policy="default", cache="cold",
                             measurement=other).headroom == ()
    with pytest.raises(ValueError, match="unfused"):
        build_arch_bounds(spec, bounds[1:], precision_policy="default", cache="cold")


def test_kernel_rows_label_emulated_pipes(tmp_path: Path) -> None:
    """Issue 14 follow-up: an fp32 matmul under `default` on H100 runs at 3xTF32.

    H100 SXM: tf32 494.7 TFLOP/s / 3 = 164.9 > 67 (vector fp32), so the kernel row says
    `3xtf32`, not `tf32`, and the text summary prints `tensor:3xtf32`.
    """
    b = compute_bounds(_graph(), load_hardware_spec("H100_SXM"), model="unfused")
    mm = build_kernel_row(b.kernels[0])
    assert (mm.unit, mm.precision) == ("tensor", "3xtf32")
    path = tmp_path / "mm_copy.alir"
    path.write_text(MATMUL_THEN_COPY)
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off"))
    assert "tensor:3xtf32" in render_text(report)
