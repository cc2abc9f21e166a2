"""Roofline and per-kernel charts from a report (matplotlib, imported lazily).

Contract: ``Report -> image file`` (PNG or SVG by suffix). One figure with two
panels: a log-log roofline (device roofs per precision and memory level, each
kernel as a point at its arithmetic intensity and bound-limited throughput, the
measured program as a star) and a horizontal bar chart of the slowest kernels'
unfused bound times. Names from the report (program, kernels, devices) are drawn
literally: a ``$`` never starts matplotlib mathtext (`_literal`). The image is written
atomically (`solar.files.atomic_output`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from solar.diagnostics import UsageError
from solar.files import atomic_output, prepare_output
from solar.report.schema import ArchBounds, Report

__all__ = ["plot_report"]

_MAX_BARS = 15


def _literal(text: str) -> str:
    r"""``text`` with every ``$`` escaped, so matplotlib draws it instead of parsing math.

    Escaping every dollar leaves matplotlib no unescaped pair, and it turns ``\$`` back
    into ``$`` when it draws (an existing ``\$`` stays as written).

    >>> _literal("a$b$c")
    'a\\$b\\$c'
    """
    return text.replace("$", r"\$")


def _pick_arch(report: Report, arch: str | None) -> ArchBounds:
    if not report.archs:
        raise UsageError("the report has no architectures to plot", code="E0920")
    if arch is None:
        return report.archs[0]
    for a in report.archs:
        if a.arch.lower() == arch.lower():
            return a
    known = ", ".join(a.arch for a in report.archs)
    raise UsageError(f"report has no architecture `{arch}` (has: {known})", code="E0920")


def plot_report(report: Report, output: Path, *, arch: str | None = None) -> Path:
    """Draw the roofline and kernel-time charts of ``report`` into ``output``.

    Raises:
        UsageError: unsupported suffix, unknown arch, or matplotlib missing (E0920-E0922);
            ``output`` is a directory or cannot be written (E0940, E0941).
    """
    if output.suffix.lower() not in (".png", ".svg"):
        raise UsageError(f"plot output must end in .png or .svg, got `{output.name}`", code="E0921")
    prepare_output(output)  # fail before drawing
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "plotting needs matplotlib: pip install 'solar-sol[plot]'", code="E0922"
        ) from None
    row = _pick_arch(report, arch)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(14, 5.5), width_ratios=(1.2, 1))
    _draw_roofline(ax, report, row)
    _draw_bars(bx, row)
    title = f"SOLAR — {report.program} on {row.display_name}"
    fig.suptitle(_literal(f"{title} (precision policy: {row.precision_policy})"))
    fig.tight_layout()
    try:
        with atomic_output(output) as fh:
            fig.savefig(fh, dpi=130, format=output.suffix.lower().lstrip("."))
    finally:
        plt.close(fig)
    return output


def _draw_roofline(ax: Any, report: Report, row: ArchBounds) -> None:
    import numpy as np

    kernels = [k for k in row.kernels if k.flops > 0 and k.bytes > 0]
    ais = [k.arithmetic_intensity_flops_per_byte for k in kernels] or [1.0]
    lo, hi = max(1e-3, min(ais) / 10), max(1e3, max(ais) * 10)
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    # a kernel at `3xtf32` runs on the TF32 roof (at a third of it)
    used = {f"{k.unit}:{k.precision.split('x')[-1]}" for k in row.kernels}
    roofs = {u: p for u, p in row.peak_flops_per_s.items() if u in used}
    top_unit, top_peak = max(row.peak_flops_per_s.items(), key=lambda kv: kv[1])
    roofs.setdefault(top_unit, top_peak)  # the device's best, for context
    peak_max = max(roofs.values())
    # memory roofs: one slanted line per level, up to the highest compute roof
    for name, bw, style in (
        ("DRAM", row.dram_bandwidth_bytes_per_s, "-"),
        ("L2", row.l2_bandwidth_bytes_per_s, ":"),
    ):
        if bw:
            ax.plot(
                x,
                np.minimum(peak_max, bw * x),
                linestyle=style,
                color="0.35",
                label=f"{name} {bw / 1e12:.2f} TB/s",
            )
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown", "tab:olive"]
    for i, (unit, peak) in enumerate(sorted(roofs.items(), key=lambda kv: -kv[1])):
        ridge = peak / row.dram_bandwidth_bytes_per_s
        xs = x[x >= ridge]
        ax.plot(
            xs,
            np.full_like(xs, peak),
            color=colors[i % len(colors)],
            linewidth=2,
            label=_literal(
                f"{unit} {peak / 1e12:,.0f} TFLOP/s" + ("" if unit in used else " (unused)")
            ),
        )
    for k in kernels:
        color = "tab:red" if k.bottleneck == "compute" else "tab:blue"
        ax.scatter(
            k.arithmetic_intensity_flops_per_byte,
            k.flops / k.time_s if k.time_s else 0,
            s=22,
            color=color,
            edgecolor="black",
            linewidth=0.4,
            zorder=3,
        )
    for k in sorted(kernels, key=lambda k: -k.time_s)[:4]:
        ax.annotate(
            _literal(k.name[:24]),
            (k.arithmetic_intensity_flops_per_byte, k.flops / k.time_s),
            fontsize=7,
            xytext=(4, -10),
            textcoords="offset points",
        )
    m = report.measurement
    # Note [Headroom on the measured device] (solar.pipeline): a time measured on another
    # device has no place on this device's roofline
    if (
        m is not None
        and m.arch is not None
        and m.arch.lower() == row.arch.lower()
        and report.fused_dram_bytes > 0
    ):
        ai = report.flops / report.fused_dram_bytes
        ach = report.flops / (m.median_ms / 1e3)
        ax.scatter(
            [ai],
            [ach],
            marker="*",
            s=200,
            color="gold",
            edgecolor="black",
            zorder=4,
            label=f"measured {m.median_ms:.3g} ms (whole program)",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(
        "Roofline: kernels at their unfused bound (red compute-, blue memory-bound)", fontsize=10
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")


def _draw_bars(bx: Any, row: ArchBounds) -> None:
    top = sorted(row.kernels, key=lambda k: -k.time_s)[:_MAX_BARS][::-1]
    names = [_literal(k.name if len(k.name) <= 32 else k.name[:29] + "...") for k in top]
    times_us = [k.time_s * 1e6 for k in top]
    colors = ["tab:red" if k.bottleneck == "compute" else "tab:blue" for k in top]
    bx.barh(names, times_us, color=colors)
    bx.set_xlabel("unfused bound time (µs)   red = compute-bound, blue = memory-bound")
    total = sum(k.time_s for k in row.kernels) * 1e6
    bx.set_title(f"Slowest kernels ({len(row.kernels)} total, {total:.1f} µs summed)")
    bx.tick_params(axis="y", labelsize=7)
