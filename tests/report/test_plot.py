"""The roofline figure (solar.report.plot) and its label placement (solar.report.labels)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze
from solar.report import Report
from solar.report.labels import overlap, place_labels
from solar.report.plot import group_kernels, plot_report

matplotlib = pytest.importorskip("matplotlib")

# three identical projections (one roofline point), a different matmul, and a copy
THREE_PROJECTIONS = """solar-ir 1
program three_proj
size M = 4096
size D = 1024
input X : f32[M, D]
param W1 : f32[D, D]
param W2 : f32[D, D]
param W3 : f32[D, D]
output Q : f32[M, D]
output K : f32[M, D]
output V : f32[M, D]
output S : f32[M, M]
output C : f32[M, D]
kernel q { for i in 0 .. M { for j in 0 .. D { Q[i, j] = 0.0
  for k in 0 .. D { Q[i, j] += X[i, k] * W1[k, j] } } } }
kernel k { for i in 0 .. M { for j in 0 .. D { K[i, j] = 0.0
  for k in 0 .. D { K[i, j] += X[i, k] * W2[k, j] } } } }
kernel v { for i in 0 .. M { for j in 0 .. D { V[i, j] = 0.0
  for k in 0 .. D { V[i, j] += X[i, k] * W3[k, j] } } } }
kernel scores { for i in 0 .. M { for j in 0 .. M { S[i, j] = 0.0
  for k in 0 .. D { S[i, j] += X[i, k] * X[j, k] } } } }
kernel copy { for i in 0 .. M { for j in 0 .. D { C[i, j] = X[i, j] } } }
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    path = tmp_path_factory.mktemp("plot") / "three_proj.alir"
    path.write_text(THREE_PROJECTIONS)
    return analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off"))


def _svg_text(report: Report, path: Path) -> str:
    """The figure as SVG with its text kept as text, so a test can read it."""
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        plot_report(report, path)
    return path.read_text(encoding="utf-8")


def test_identical_kernels_are_one_point(report: Report) -> None:
    groups = group_kernels(report.archs[0].kernels)
    assert [g.label for g in groups][:2] == ["scores", "k +2 alike"]
    assert sorted(k.name for k in groups[1].kernels) == ["k", "q", "v"]


def test_figure_says_what_was_analysed(report: Report, tmp_path: Path) -> None:
    svg = _svg_text(report, tmp_path / "r.svg")
    # the title: program, sizes, device, precision policy and the roofs used, cache
    for text in ("three_proj (D=1024, M=4096)", "H100_SXM", "precision policy default",
                 "tensor:3xtf32", "warm cache"):
        assert text in svg, text
    # every bound model of the whole program, not just the unfused one
    for model in ("unfused", "fused", "cache-aware"):
        assert f"whole program, {model} bound" in svg
    # only the roofs the program uses: H100's fp8 peak does not set the axis
    assert "fp8" not in svg
    assert "tensor:tf32 roof" in svg
    assert "copy" in svg  # memory-bound points are labelled too
    assert "k +2 alike" in svg
    assert not re.search(r"\b0\.0 µs", svg)


def test_tiny_bounds_show_the_launch_latency(tmp_path: Path) -> None:
    path = tmp_path / "tiny.alir"
    path.write_text(THREE_PROJECTIONS.replace("4096", "8").replace("1024", "4"))
    tiny = analyze(path, AnalyzeOptions(archs=("H100_SXM",), validate="off"))
    svg = _svg_text(tiny, tmp_path / "tiny.svg")
    assert "one kernel launch" in svg
    assert " ns" in svg  # an adaptive unit, never `0.0 µs summed`


@pytest.mark.parametrize("suffix", ["png", "svg", "pdf"])
def test_formats(report: Report, tmp_path: Path, suffix: str) -> None:
    out = plot_report(report, tmp_path / f"r.{suffix}")
    assert out.stat().st_size > 1000


def test_labels_never_overlap() -> None:
    import matplotlib.pyplot as plt

    matplotlib.use("Agg")
    fig, ax = plt.subplots(figsize=(4, 3))
    try:
        ax.set_xlim(0, 10)
        ax.set_ylim(0, 10)
        points = [(5.0 + 0.05 * i, 5.0 + 0.03 * i) for i in range(6)]
        ax.scatter(*zip(*points, strict=True))
        anchors = [(p, f"kernel_{i}_addmm") for i, p in enumerate(points)]
        renderer = fig.canvas.get_renderer()
        boxes = place_labels(ax, anchors, obstacles=[], renderer=renderer)
    finally:
        plt.close(fig)
    assert len(boxes) == len(anchors)
    for a, b in itertools.combinations(boxes, 2):
        assert not overlap(a, b)
