"""Human-readable rendering of a `Report` for a terminal.

Contract: ``Report -> str``, at most ~100 columns, deterministic. Shows the
program, coverage, validation outcome, the three bounds per architecture with
bottleneck and arithmetic intensity, the top kernels by unfused time, and
headroom when a measurement exists.
"""

from __future__ import annotations

from solar.report.schema import ArchBounds, Report

__all__ = ["format_bytes", "format_flops", "format_time", "render_text"]

_TOP_KERNELS = 8


def format_time(seconds: float) -> str:
    """Seconds with an adaptive unit.

    >>> format_time(2.05e-3)
    '2.050 ms'
    """
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3f} µs"
    return f"{seconds * 1e9:.1f} ns"


def _scaled(value: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_flops(value: float) -> str:
    """FLOPs with an SI prefix.

    >>> format_flops(1.37e11)
    '137 GFLOP'
    """
    return _scaled(value, "FLOP")


def format_bytes(value: float) -> str:
    """Bytes with an SI prefix (powers of 10, as bandwidths are quoted)."""
    return _scaled(value, "B")


def _validation_line(report: Report) -> str:
    v = report.validation
    if v.status == "skipped":
        return f"validation: SKIPPED — {v.reason or 'no reference'}"
    sizes = ", ".join(f"{k}={n}" for k, n in sorted(v.sizes.items()))
    worst = max((o.max_abs_error or 0.0 for o in v.outputs), default=0.0)
    tol = v.outputs[0] if v.outputs else None
    tol_text = f", rtol {tol.rtol:.1e} atol {tol.atol:.1e}" if tol else ""
    head = f"validation: {v.status.upper()} ({v.strategy}"
    if v.fraction_checked < 1.0:
        head += f", {v.fraction_checked:.1%} of outputs checked"
    head += f"{tol_text}, max abs err {worst:.2e}, {v.wall_time_s:.2f} s)"
    if sizes:
        head += f"\n            at {sizes}"
    if v.reason:
        head += f"\n            {v.reason}"
    return head


def _arch_block(arch: ArchBounds) -> list[str]:
    lines = [
        f"{arch.display_name} [{arch.arch}]"
        + (" (measured spec)" if arch.spec_measured else "")
        + f" — precision policy {arch.precision_policy}",
        f"  cache: {arch.cache_assumption}",
        f"  {'model':<12} {'bound':>12} {'compute':>12} {'memory':>12} {'DRAM bytes':>11} "
        f"{'AI F/B':>8}  bottleneck",
    ]
    for b in arch.bounds:
        lines.append(
            f"  {b.model:<12} {format_time(b.time_s):>12} {format_time(b.compute_time_s):>12} "
            f"{format_time(b.memory_time_s):>12} {format_bytes(b.dram_bytes):>11} "
            f"{b.arithmetic_intensity_flops_per_byte:>8.1f}  {b.bottleneck}"
        )
    for h in arch.headroom:
        flag = "  <-- VIOLATION: bound above measured time" if h.violation else ""
        if h.model == "unfused" and h.ratio < 1.0:
            flag = "  (faster than any kernel-by-kernel execution: the code fuses kernels)"
        lines.append(f"  headroom vs {h.model:<11} {h.ratio:8.2f}x{flag}")
    top = sorted(arch.kernels, key=lambda k: -k.time_s)[:_TOP_KERNELS]
    if top:
        total = sum(k.time_s for k in arch.kernels) or 1.0
        lines.append(f"  top kernels by unfused bound ({len(arch.kernels)} kernels):")
        for k in top:
            name = k.name if len(k.name) <= 34 else k.name[:31] + "..."
            lines.append(
                f"    {name:<34} {format_time(k.time_s):>11} {k.time_s / total:6.1%} "
                f"{k.unit}:{k.precision:<6} {k.bottleneck}"
            )
    return lines


def render_text(report: Report) -> str:
    """The terminal summary of a report."""
    cov = report.coverage
    lines = [
        f"SOLAR {report.tool.version} — {report.program} ({report.input.path}, "
        f"frontend {report.frontend.name}: {report.frontend.captured_with})",
        f"IR: {report.ir.kernels} kernels, {report.ir.statements} statements"
        + (f", saved to {report.ir.path}" if report.ir.path else ""),
    ]
    if cov.complete:
        lines.append(f"coverage: complete ({cov.ops_total} ops)")
    else:
        lines.append(
            f"coverage: PARTIAL — {cov.covered_bytes_fraction:.1%} of tensor bytes covered; "
            "bounds cover the lowered part only"
        )
        for u in cov.uncovered:
            lines.append(f"  uncovered: {u.op} ×{u.count} ({u.bytes_share:.1%} of bytes)")
    lines.append(_validation_line(report))
    traffic = format_bytes(report.fused_dram_bytes)
    lines.append(
        f"work: {format_flops(report.flops)}; compulsory traffic {traffic} "
        "(inputs, parameters, outputs once)"
    )
    if report.measurement is not None:
        m = report.measurement
        lines.append(
            f"measured: {m.median_ms:.4g} ms median ({m.source}, {m.trials} trials"
            + (f", {m.device}" if m.device else "")
            + ")"
        )
    for arch in report.archs:
        lines.append("")
        lines.extend(_arch_block(arch))
    for w in report.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"
