"""Roofline and per-kernel charts from a report (matplotlib, imported lazily).

Contract: ``Report -> image file`` (PNG, SVG or PDF by suffix). One figure with two
panels, meant for a design review:

* a log-log roofline of the roofs the program uses (memory levels and the compute
  roofs its kernels run on; unused roofs do not set the axis), each kernel a point at
  its unfused bound sized by its share of the time, identical kernels drawn once
  (``qkv_addmm ×3``), every point of the top kernels labelled without overlaps
  (`solar.report.labels`), and the whole program at each bound model (unfused, fused,
  cache-aware) plus the measured time of this device as a star;
* horizontal bars of the slowest kernels' unfused bounds in an adaptive unit, with the
  roof that binds each, measured per-kernel times when the report has them, and the
  kernel-launch latency when the bounds are near or below it.

The title names the program, the sizes analysed, the device, the precision policy and
the cache assumption. Names from the report are drawn literally: a ``$`` never starts
matplotlib mathtext (`_literal`). The image is written atomically
(`solar.files.atomic_output`).

Kernels whose (intensity, throughput) agree to 1% are one point; labels are placed by
`solar.report.labels.place_labels` (Note [Label placement]).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solar.diagnostics import UsageError, printable
from solar.files import atomic_output, prepare_output
from solar.report.labels import Box, place_labels
from solar.report.render import LAUNCH_LATENCY_S, format_time
from solar.report.schema import ArchBounds, KernelRow, Report

__all__ = ["PLOT_SUFFIXES", "plot_report"]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
"""Output formats `plot_report` writes, chosen by the file's suffix."""

_MAX_BARS = 15
_MAX_LABELS = 12
_COMPUTE = "tab:red"
_MEMORY = "tab:blue"
_PROGRAM_MARKERS = {
    "unfused": ("D", "0.25"),
    "fused": ("s", "tab:green"),
    "cache-aware": ("^", "tab:purple"),
}


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


@dataclass(frozen=True, slots=True)
class _Group:
    """Kernels drawn as one roofline point: same intensity and throughput within 1%."""

    kernels: tuple[KernelRow, ...]

    @property
    def lead(self) -> KernelRow:
        return self.kernels[0]

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    @property
    def label(self) -> str:
        names = [k.name for k in self.kernels]
        text = _short(names[0], 24)
        if len(names) == 2:
            text += f", {_short(names[1], 24)}"
        elif len(names) > 2:
            text += f" +{len(names) - 1} alike"
        return text


def group_kernels(kernels: Sequence[KernelRow]) -> list[_Group]:
    """Kernels with work, grouped by (intensity, throughput) within 1%, slowest group first.

    >>> from solar.report.schema import KernelRow
    >>> def k(name, t):
    ...     return KernelRow(name=name, flops=1e9, bytes=1e6, unit="tensor",
    ...                      precision="tf32", time_s=t, bottleneck="compute",
    ...                      arithmetic_intensity_flops_per_byte=1e3)
    >>> [g.label for g in group_kernels([k("a", 1e-3), k("b", 1.001e-3), k("c", 5e-4)])]
    ['b, a', 'c']
    """
    groups: list[list[KernelRow]] = []
    for k in sorted(kernels, key=lambda k: (-k.time_s, k.name)):
        if k.flops <= 0 or k.bytes <= 0 or k.time_s <= 0:
            continue
        for g in groups:
            lead = g[0]
            if (
                _close(
                    lead.arithmetic_intensity_flops_per_byte, k.arithmetic_intensity_flops_per_byte
                )
                and _close(lead.flops / lead.time_s, k.flops / k.time_s)
                and lead.bottleneck == k.bottleneck
            ):
                g.append(k)
                break
        else:
            groups.append([k])
    out = [_Group(tuple(g)) for g in groups]
    return sorted(out, key=lambda g: -g.time_s)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.01 * max(abs(a), abs(b))


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def _title(report: Report, row: ArchBounds) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in sorted(report.sizes.items()))
    if len(sizes) > 90:
        sizes = sizes[:87] + "..."
    cache = row.cache_assumption.split(":", 1)[0]
    used = ", ".join(sorted({f"{k.unit}:{k.precision}" for k in row.kernels if k.flops > 0}))
    # names from the report are shortened: a 10 MB title keeps matplotlib busy for minutes
    head = f"SOLAR — {_short(printable(report.program), 80)}" + (f" ({sizes})" if sizes else "")
    tail = (
        f"{_short(printable(row.display_name), 60)} [{_short(printable(row.arch), 40)}]"
        + (" (measured spec)" if row.spec_measured else "")
        + f" · precision policy {row.precision_policy} ({used}) · {cache} cache"
    )
    return _literal(f"{head}\n{tail}")


def plot_report(report: Report, output: Path, *, arch: str | None = None) -> Path:
    """Draw the roofline and kernel-time charts of ``report`` into ``output``.

    Raises:
        UsageError: unsupported suffix, unknown arch, or matplotlib missing (E0920-E0922);
            ``output`` is a directory or cannot be written (E0940, E0941).
    """
    if output.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(
            f"plot output must end in {', '.join(PLOT_SUFFIXES)}, got `{output.name}`",
            code="E0921",
        )
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
    if report.distributed is None:
        fig, (ax, bx) = plt.subplots(1, 2, figsize=(15, 6.2), width_ratios=(1.25, 1))
    else:
        from solar.report.plot_distributed import draw_ranks, extra_panels

        extras = extra_panels(report.distributed)
        rows = 2 if extras else 1
        fig, axes = plt.subplots(rows, 3, figsize=(21, 6.2 * rows),
                                 width_ratios=(1.25, 1, 0.9), squeeze=False)
        ax, bx, dx = axes[0]
        draw_ranks(dx, report.distributed)
        for i in range(3 * (rows - 1)):
            panel = axes[1][i]
            if i < len(extras):
                extras[i](panel)
            else:
                panel.axis("off")
    _draw_roofline(ax, report, row)
    _draw_bars(bx, row)
    fig.suptitle(_title(report, row), fontsize=11)
    fig.tight_layout()
    _place_labels(fig, ax, row, group_kernels(row.kernels)[:_MAX_LABELS])
    try:
        with atomic_output(output) as fh:
            fig.savefig(fh, dpi=130, format=output.suffix.lower().lstrip("."))
    finally:
        plt.close(fig)
    return output


def _used_roofs(row: ArchBounds) -> dict[str, float]:
    # a kernel at `3xtf32` runs on the TF32 roof (at a third of it)
    used = {f"{k.unit}:{k.precision.split('x')[-1]}" for k in row.kernels if k.flops > 0}
    roofs = {u: p for u, p in row.peak_flops_per_s.items() if u in used}
    if not roofs:  # no kernel with work: the device's best, so the chart has a roof
        unit, peak = max(row.peak_flops_per_s.items(), key=lambda kv: kv[1])
        roofs[unit] = peak
    return roofs


def _emulation_passes(row: ArchBounds, unit: str) -> list[int]:
    """The pass counts ``N`` of kernels run as ``Nx<precision>`` on roof ``unit``."""
    out = set()
    for k in row.kernels:
        head, _, base = k.precision.partition("x")
        if base and head.isdigit() and f"{k.unit}:{base}" == unit and k.flops > 0:
            out.add(int(head))
    return sorted(out)


def _draw_roofline(ax: Any, report: Report, row: ArchBounds) -> None:
    import numpy as np

    groups = group_kernels(row.kernels)
    roofs = _used_roofs(row)
    peak_max = max(roofs.values())
    points = [b for b in row.bounds if b.time_s > 0 and b.flops > 0]
    ais = [g.lead.arithmetic_intensity_flops_per_byte for g in groups] + [
        b.arithmetic_intensity_flops_per_byte
        for b in points
        if 0 < b.arithmetic_intensity_flops_per_byte < float("inf")
    ]
    ridge = peak_max / row.dram_bandwidth_bytes_per_s
    lo = min([*ais, ridge]) / 4
    hi = max([*ais, ridge]) * 4
    x = np.logspace(np.log10(lo), np.log10(hi), 256)
    for name, bw, style in (
        ("DRAM", row.dram_bandwidth_bytes_per_s, "-"),
        ("L2", row.l2_bandwidth_bytes_per_s, ":"),
    ):
        if bw:
            ax.plot(
                x,
                np.minimum(peak_max, bw * x),
                linestyle=style,
                color="0.3",
                linewidth=1.3,
                label=f"{name} {bw / 1e12:.2f} TB/s",
            )
    colors = ["tab:orange", "tab:olive", "tab:cyan", "tab:brown", "tab:pink"]
    for i, (unit, peak) in enumerate(sorted(roofs.items(), key=lambda kv: -kv[1])):
        xs = x[x >= peak / row.dram_bandwidth_bytes_per_s]
        color = colors[i % len(colors)]
        ax.plot(
            xs,
            np.full_like(xs, peak),
            color=color,
            linewidth=2.2,
            label=_literal(f"{unit} roof {peak / 1e12:,.0f} TFLOP/s"),
        )
        for passes in _emulation_passes(row, unit):
            # fp32 accuracy from N passes of a narrower unit: 1/N of its roof
            xs = x[x >= peak / passes / row.dram_bandwidth_bytes_per_s]
            ax.plot(
                xs,
                np.full_like(xs, peak / passes),
                color=color,
                linewidth=1.4,
                linestyle="--",
                label=_literal(
                    f"{unit.split(':')[0]}:{passes}x{unit.split(':')[1]} (fp32-accurate) "
                    f"{peak / passes / 1e12:,.0f} TFLOP/s"
                ),
            )
    total = sum(g.time_s for g in groups) or 1.0
    for g in groups:
        k = g.lead
        ax.scatter(
            k.arithmetic_intensity_flops_per_byte,
            k.flops / k.time_s,
            s=_marker_area(g.time_s / total),
            color=_COMPUTE if k.bottleneck == "compute" else _MEMORY,
            edgecolor="black",
            linewidth=0.5,
            alpha=0.75,
            zorder=3,
        )
    for b in points:
        marker, color = _PROGRAM_MARKERS[b.model]
        ax.scatter(
            b.arithmetic_intensity_flops_per_byte,
            b.flops / b.time_s,
            marker=marker,
            s=70,
            facecolor="none",
            edgecolor=color,
            linewidth=1.8,
            zorder=4,
            label=f"whole program, {b.model} bound {format_time(b.time_s)}",
        )
    _draw_measured(ax, report, row)
    ax.scatter(
        [],
        [],
        s=40,
        color=_COMPUTE,
        edgecolor="black",
        linewidth=0.5,
        label="kernel, compute-bound (size ∝ time)",
    )
    ax.scatter(
        [], [], s=40, color=_MEMORY, edgecolor="black", linewidth=0.5, label="kernel, memory-bound"
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    y_lo = min(
        [row.dram_bandwidth_bytes_per_s * lo] + [g.lead.flops / g.lead.time_s for g in groups]
    )
    ax.set_ylim(y_lo / 3, peak_max * 3)
    ax.set_xlabel("arithmetic intensity (FLOP / byte moved)")
    ax.set_ylabel("attainable FLOP/s at the bound")
    ax.set_title("Roofline: each kernel at its unfused bound", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", framealpha=0.9)


def _marker_area(share: float) -> float:
    """A kernel point's area in points^2: grows with its share of the summed bound."""
    return 30 + 400 * share


def _draw_measured(ax: Any, report: Report, row: ArchBounds) -> None:
    m = report.measurement
    # Note [Headroom on the measured device] (solar.pipeline): a time measured on another
    # device has no place on this device's roofline
    if m is None or m.arch is None or m.arch.lower() != row.arch.lower():
        return
    fused = next((b for b in row.bounds if b.model == "fused"), None)
    if fused is None or not 0 < fused.arithmetic_intensity_flops_per_byte < float("inf"):
        return
    ax.scatter(
        [fused.arithmetic_intensity_flops_per_byte],
        [report.flops / (m.median_ms / 1e3)],
        marker="*",
        s=220,
        color="gold",
        edgecolor="black",
        zorder=5,
        label=f"measured {format_time(m.median_ms / 1e3)} (whole program)",
    )


def _place_labels(fig: Any, ax: Any, row: ArchBounds, groups: Sequence[_Group]) -> None:
    """Label each group's point clear of every point, marker and the legend."""
    renderer = fig.canvas.get_renderer()
    xys = [
        (g.lead.arithmetic_intensity_flops_per_byte, g.lead.flops / g.lead.time_s) for g in groups
    ]
    px_per_pt = fig.dpi / 72.0
    obstacles: list[Box] = []
    total = sum(g.time_s for g in group_kernels(row.kernels)) or 1.0
    for g, xy in zip(groups, xys, strict=True):
        obstacles.append(_square(ax, xy, _marker_area(g.time_s / total) ** 0.5 / 2 * px_per_pt))
    for b in row.bounds:
        if b.time_s > 0 and 0 < b.arithmetic_intensity_flops_per_byte < float("inf"):
            xy = (b.arithmetic_intensity_flops_per_byte, b.flops / b.time_s)
            obstacles.append(_square(ax, xy, 5 * px_per_pt))
    legend = ax.get_legend()
    if legend is not None:
        lb = legend.get_window_extent(renderer)
        obstacles.append((lb.x0, lb.y0, lb.x1, lb.y1))
    anchors = [(xy, _literal(g.label)) for g, xy in zip(groups, xys, strict=True)]
    place_labels(ax, anchors, obstacles=obstacles, renderer=renderer)


def _square(ax: Any, xy: tuple[float, float], half_px: float) -> Box:
    x, y = ax.transData.transform(xy)
    return (x - half_px, y - half_px, x + half_px, y + half_px)


def _time_unit(seconds: float) -> tuple[float, str]:
    """The unit bars are drawn in: the largest whose value of ``seconds`` is >= 1.

    >>> _time_unit(3e-3), _time_unit(3e-5), _time_unit(4e-10)
    ((1000.0, 'ms'), (1000000.0, 'µs'), (1000000000.0, 'ns'))
    """
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if seconds * scale >= 1.0:
            return scale, unit
    return 1e9, "ns"


def _roof_text(k: KernelRow) -> str:
    return f"{k.unit}:{k.precision}" if k.bottleneck == "compute" else "memory"


def _draw_bars(bx: Any, row: ArchBounds) -> None:
    kernels = sorted(row.kernels, key=lambda k: (-k.time_s, k.name))
    top = kernels[:_MAX_BARS][::-1]
    slowest = max((max(k.time_s, k.measured_s or 0.0) for k in top), default=0.0)
    show_launch = 0 < slowest <= 50 * LAUNCH_LATENCY_S  # bounds near or below one launch
    scale, unit = _time_unit(max(slowest, LAUNCH_LATENCY_S if show_launch else 0.0) or 1e-9)
    names = [_literal(_short(printable(k.name), 30)) for k in top]
    times = [k.time_s * scale for k in top]
    colors = [_COMPUTE if k.bottleneck == "compute" else _MEMORY for k in top]
    ys = list(range(len(top)))
    bx.barh(ys, times, color=colors, height=0.7)
    bx.set_yticks(ys, names)
    for y, k, t in zip(ys, top, times, strict=True):
        bx.annotate(
            f"{format_time(k.time_s)} · {_roof_text(k)}",
            (t, y),
            va="center",
            xytext=(3, 0),
            textcoords="offset points",
            fontsize=7,
            color="0.2",
            bbox={
                "boxstyle": "square,pad=0.1",
                "facecolor": "white",
                "edgecolor": "none",
                "alpha": 0.8,
            },
        )
    measured = [
        (y, k.measured_s * scale) for y, k in zip(ys, top, strict=True) if k.measured_s is not None
    ]
    if measured:
        bx.scatter(
            [m for _, m in measured],
            [y for y, _ in measured],
            marker="|",
            s=160,
            color="black",
            zorder=4,
            label="measured on this device",
        )
    right = max([*times, *(m for _, m in measured), 1e-30])
    if show_launch:
        bx.axvline(
            LAUNCH_LATENCY_S * scale,
            color="0.4",
            linestyle="--",
            linewidth=1,
            label=f"one kernel launch (~{LAUNCH_LATENCY_S * 1e6:.0f} µs)",
        )
        right = max(right, LAUNCH_LATENCY_S * scale)
    bx.set_xlim(0, right * 1.45)
    bx.set_ylim(-0.6, max(len(top), 8) - 0.4)  # a few kernels keep bars of normal height
    unfused = sum(k.time_s for k in row.kernels)
    fused = next((b for b in row.bounds if b.model == "fused"), None)
    fused_text = f"; fused bound {format_time(fused.time_s)}" if fused is not None else ""
    shown = (
        f"slowest {len(top)} of {len(kernels)}"
        if len(top) < len(kernels)
        else (f"all {len(kernels)}")
    )
    bx.set_title(
        f"Kernels by unfused bound ({shown}; sum {format_time(unfused)}{fused_text})",
        fontsize=10,
    )
    bx.set_xlabel(f"unfused bound per kernel ({unit});  red = compute-bound, blue = memory-bound")
    bx.tick_params(axis="y", labelsize=7)
    if measured or bx.get_lines():
        bx.legend(fontsize=7, loc="lower right")
    if unfused > 0 and fused is not None and fused.time_s < LAUNCH_LATENCY_S:
        bx.text(
            0.98,
            0.97,
            f"fused bound {format_time(fused.time_s)} < one kernel launch:\n"
            "launch overhead, not the roofline, decides the time at these sizes",
            transform=bx.transAxes,
            ha="right",
            va="top",
            fontsize=8,
            color="darkred",
        )
