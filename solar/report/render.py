"""Human-readable rendering of a `Report` for a terminal.

Contract: ``Report -> str``, at most ~100 columns, deterministic. Shows the
program, coverage, validation outcome, the three bounds per architecture with
bottleneck and arithmetic intensity, the top kernels by unfused time, and
headroom when a measurement exists.
"""

from __future__ import annotations

from solar.report.schema import ArchBounds, Report, TrainingInfo

__all__ = ["format_bytes", "format_flops", "format_time", "render_text"]

_TOP_KERNELS = 8


def format_time(seconds: float) -> str:
    """Seconds with an adaptive unit.

    >>> format_time(2.05e-3)
    '2.050 ms'
    >>> format_time(9.76e280)
    '9.760e+280 s'
    """
    if seconds >= 1e6:  # 11.6 days: digits past this say nothing
        return f"{seconds:.3e} s"
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3f} µs"
    return f"{seconds * 1e9:.1f} ns"


def _intensity(flops_per_byte: float) -> str:
    """FLOPs per byte in at most 8 characters (``inf`` when no byte moves).

    >>> _intensity(10.66), _intensity(1.968e279)
    ('10.7', '1.97e+279')
    """
    return f"{flops_per_byte:.1f}" if flops_per_byte < 1e7 else f"{flops_per_byte:.3g}"


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
            f"{_intensity(b.arithmetic_intensity_flops_per_byte):>8}  {b.bottleneck}"
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
                f"{k.unit}:{k.precision:<5} {k.bottleneck}"
            )
    return lines


def _share(x: float) -> str:
    """A share as a percentage that never rounds a partial share to 0% or 100%.

    >>> _share(0.9999894), _share(1.0), _share(1e-5), _share(0.25)
    ('99.999%', '100.0%', '0.001%', '25.0%')
    """
    text = f"{x:.1%}"
    if (text == "100.0%" and x < 1.0) or (text == "0.0%" and x > 0.0):
        digits = 1
        while digits < 6 and text in ("100." + "0" * digits + "%", "0." + "0" * digits + "%"):
            digits += 1
            text = f"{x:.{digits}%}"
    return text


def _coverage_lines(report: Report) -> list[str]:
    cov = report.coverage
    flops = cov.uncovered_flops_fraction
    if cov.complete:
        lines = [f"coverage: complete ({cov.ops_total} ops)"]
    else:
        flops_text = "" if flops is None else f" and {_share(1 - flops)} of counted FLOPs"
        lines = [
            f"coverage: PARTIAL — {_share(cov.covered_bytes_fraction)} of tensor bytes"
            f"{flops_text} covered; bounds cover the lowered part only"
        ]
        for u in cov.uncovered:
            counted = "" if u.counted_flops is None else f", {format_flops(u.counted_flops)}"
            lines.append(
                f"  uncovered: {u.op} ×{u.count} ({_share(u.bytes_share)} of bytes{counted})"
            )
    ind = cov.independent_flops
    if ind is not None:
        verdict = "!! SHORTFALL: SOLAR counts less" if ind.shortfall else "ok"
        padding = f", {format_flops(ind.padding_flops)} over padding" if ind.padding_flops else ""
        lines.append(
            f"  FLOPs check vs {ind.counter.rsplit('.', 1)[-1]}: SOLAR "
            f"{format_flops(ind.solar_flops)}, counted {format_flops(ind.covered_flops)} "
            f"in covered ops{padding} ({verdict})"
        )
    return lines


def _training_block(t: TrainingInfo) -> list[str]:
    """The phases of a training step: work, traffic and bounds per architecture."""
    lines = [
        f"training step: loss {t.loss}; optimizer {t.optimizer}",
        f"  memory: parameters {format_bytes(t.parameter_bytes)}, optimizer state "
        f"{format_bytes(t.optimizer_state_bytes)}, gradients {format_bytes(t.gradient_bytes)}, "
        f"saved activations {format_bytes(t.saved_activation_bytes)}; peak >= "
        f"{format_bytes(t.peak_bytes)}",
    ]
    for ph in t.phases:
        bounds = "; ".join(
            f"{a.arch} " + ", ".join(f"{b.model} {format_time(b.time_s)}" for b in a.bounds)
            for a in ph.archs
        )
        lines.append(
            f"  {ph.phase:<9} {ph.kernels:>4} kernels  {format_flops(ph.flops)}, "
            f"{format_bytes(ph.fused_dram_bytes)} compulsory — {bounds}"
        )
    return lines


def render_text(report: Report) -> str:
    """The terminal summary of a report."""
    lines = [
        f"SOLAR {report.tool.version} — {report.program} ({report.input.path}, "
        f"frontend {report.frontend.name}: {report.frontend.captured_with})",
        f"IR: {report.ir.kernels} kernels, {report.ir.statements} statements"
        + (f", saved to {report.ir.path}" if report.ir.path else ""),
    ]
    lines.extend(_coverage_lines(report))
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
    if report.training is not None:
        lines.append("")
        lines.extend(_training_block(report.training))
    for w in report.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"
