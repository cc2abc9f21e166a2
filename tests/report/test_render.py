"""What the summary says beyond the bounds table (issue 16): DRAM 0 B, fusion, tiny bounds."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SAMPLES

from solar.pipeline import AnalyzeOptions, analyze
from solar.report import Report, render_text

# a matmul then an elementwise copy of its result: fusing them saves C's round trip
MM_COPY = """solar-ir 1
program mm_copy
size N = {n}
input A : f32[N, N]
input B : f32[N, N]
temp C : f32[N, N]
output D : f32[N, N]
kernel mm {{ for i in 0 .. N {{ for j in 0 .. N {{ C[i, j] = 0.0
  for k in 0 .. N {{ C[i, j] += A[i, k] * B[k, j] }} }} }} }}
kernel copy {{ for i in 0 .. N {{ for j in 0 .. N {{ D[i, j] = C[i, j] * 2.0 }} }} }}
"""


def _report(tmp_path: Path, n: int, cache: str = "warm") -> Report:
    path = tmp_path / f"mm_copy_{n}.alir"
    path.write_text(MM_COPY.format(n=n))
    return analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off", cache=cache))  # type: ignore[arg-type]


def test_zero_dram_bytes_are_explained(tmp_path: Path) -> None:
    # 3 x 1024^2 x 4 B = 12.6 MB fit in H100's 50 MiB L2: warm, no DRAM byte moves
    warm = render_text(_report(tmp_path, 1024))
    assert "note: DRAM bytes 0 B: the program's 12.6 MB fit in the L2" in warm
    assert "--cache cold charges them to DRAM once" in warm
    cold = render_text(_report(tmp_path, 1024, cache="cold"))
    assert "DRAM bytes 0 B" not in cold


@pytest.mark.parametrize(("n", "lever"), [
    (4096, "; the compute roof is the bigger lever"),  # the matmul dominates
    (128, ": fuse the memory-bound kernels"),  # the copy's round trip is a large share
])  # fmt: skip
def test_summary_says_what_fusion_can_gain(tmp_path: Path, n: int, lever: str) -> None:
    report = _report(tmp_path, n)
    bounds = {b.model: b.time_s for b in report.archs[0].bounds}
    text = render_text(report)
    line = next(x for x in text.splitlines() if x.startswith("  fusion: gains at most"))
    share = (bounds["unfused"] - bounds["fused"]) / bounds["unfused"]
    assert f"({share:.0%} of unfused)" in line
    assert line.endswith(lever)


def test_a_bound_below_one_launch_is_a_report_warning(tmp_path: Path) -> None:
    report = _report(tmp_path, 8)
    assert any("is below one kernel launch (~2 µs)" in w for w in report.warnings)
    assert "warning: fused bound" in render_text(report)
    assert not any("kernel launch" in w for w in _report(tmp_path, 4096).warnings)


FFT_MODEL = """\
import torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return torch.fft.rfft(x, dim=-1).abs() + 1
def get_inputs():
    return [torch.randn(8, 64)]
"""


@pytest.mark.torch
def test_an_uncovered_op_without_a_flop_count_is_unknown_not_zero(tmp_path: Path) -> None:
    # FlopCounterMode has no formula for an FFT: its share of FLOPs is unknown, not 0%.
    path = tmp_path / "fft.py"
    path.write_text(FFT_MODEL)
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off"))
    fft = next(u for u in report.coverage.uncovered if "fft" in u.op)
    assert fft.counted_flops is None and fft.bytes_share > 0
    text = render_text(report)
    assert f"uncovered: {fft.op} ×1 (" in text and "of bytes, FLOPs not counted)" in text
    assert "uncovered ops with no FLOP count" in text
    warning = next(w for w in report.warnings if w.startswith("partial coverage"))
    assert f"{fft.op}" in warning and "their work is unknown" in warning


# a thin bf16 matmul (K = 4): memory-bound and already bf16, so --precision bf16 leaves
# the bound where it is
THIN_MM = """solar-ir 1
program thin_mm
size N = 4096
size K = 4
input A : bf16[N, K]
input B : bf16[K, N]
output C : bf16[N, N]
kernel mm { for i in 0 .. N { for j in 0 .. N { C[i, j] = 0.0
  for k in 0 .. K { C[i, j] += A[i, k] * B[k, j] } } } }
"""


def test_no_hint_that_leaves_the_bound_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "thin_mm.alir"
    path.write_text(THIN_MM)
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off"))
    fused = next(b for b in report.archs[0].bounds if b.model == "fused")
    assert fused.bottleneck == "memory"
    text = render_text(report)
    assert "hint:" not in text
    assert "the compute roof is the bigger lever" not in text


def test_precision_hint_names_the_bound_it_gives(tmp_path: Path) -> None:
    report = _report(tmp_path, 4096)
    text = render_text(report)
    assert "  hint: cast to bf16: fp32/TF32 matmuls and convolutions (" in text
    bf16 = analyze(tmp_path / "mm_copy_4096.alir",
                   AnalyzeOptions(archs=("H100_SXM",), validate="off", precision="bf16"))
    fused = next(b for b in bf16.archs[0].bounds if b.model == "fused")
    # the hint promises what --precision bf16 then reports (Note [Hints that move the bound])
    assert report.archs[0].bf16_bounds_s is not None
    assert report.archs[0].bf16_bounds_s["fused"] == fused.time_s
    promised = text.split("--precision bf16 bounds: fused <= ")[1].split(" (")[0]
    assert fused.time_s == pytest.approx(_seconds(promised), rel=1e-3)


def test_memory_bound_fp32_program_hints_the_bytes_bf16_halves(tmp_path: Path) -> None:
    # Note [Precision what-if bytes]: casting a memory-bound fp32 program halves its bytes
    path = tmp_path / "thin_mm_fp32.alir"
    path.write_text(THIN_MM.replace("bf16[", "f32["))
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off"))
    fused = next(b for b in report.archs[0].bounds if b.model == "fused")
    assert fused.bottleneck == "memory"
    assert report.archs[0].bf16_bounds_s is not None
    assert report.archs[0].bf16_bounds_s["fused"] == pytest.approx(fused.time_s / 2, rel=1e-3)
    assert "--precision bf16 bounds: fused <= " in render_text(report)


def _seconds(text: str) -> float:
    value, unit = text.split()
    return float(value) * {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit]


def test_columns_say_when_they_are_l2_figures(tmp_path: Path) -> None:
    warm = render_text(_report(tmp_path, 1024))  # fits the L2: no DRAM byte moves
    assert "  AI F/B column: FLOPs per L2 byte for unfused, fused, cache-aware" in warm
    assert "  memory column: the L2 term (bytes at L2 bandwidth)" in warm
    cold = render_text(_report(tmp_path, 1024, cache="cold"))
    assert "AI F/B column" not in cold


# issue 31 round three: labels a newcomer reads without the docs

SCALE = """solar-ir 1
program scale
size N = 4096
input A : f32[N, N]
output D : f32[N, N]
kernel scale { for i in 0 .. N { for j in 0 .. N { D[i, j] = A[i, j] * 2.0 } } }
"""


def test_a_bytes_only_hint_does_not_speak_of_matmuls(tmp_path: Path) -> None:
    path = tmp_path / "scale.alir"
    path.write_text(SCALE)
    text = render_text(analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off")))
    assert "  hint: cast to bf16: fp32 tensors at 2 bytes (the program has no fp32 matmul" in text
    assert "matmuls and convolutions (0%" not in text
    assert "--precision bf16 bounds: fused <= " in text


def test_unfused_dram_bytes_below_fused_are_explained() -> None:
    report = analyze(SAMPLES / "ir" / "matmul.alir", AnalyzeOptions(validate="off"))
    unfused, fused = (next(b for b in report.archs[0].bounds if b.model == m)
                      for m in ("unfused", "fused"))
    assert unfused.dram_bytes < fused.dram_bytes  # 96.5 MB vs 149 MB (docs/bounds.md)
    text = render_text(report)
    assert "note: unfused DRAM bytes below fused: the warm L2 is credited to each kernel" in text


def test_the_kernel_table_says_what_bytes_and_roof_are(tmp_path: Path) -> None:
    text = render_text(_report(tmp_path, 4096))
    legend = "    bytes: the distinct bytes a kernel reads and writes (through L2 or DRAM)"
    assert legend in text
    assert "    (3xtf32: fp32 accuracy in 3 TF32 passes)" in text  # the default policy's fp32 mm
    assert "; AI F/B: FLOPs" in text
    assert all(len(line) <= 100 for line in text.splitlines() if "bytes:" in line)
