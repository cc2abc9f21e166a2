"""Human-readable rendering of a `Report` for a terminal.

Contract: ``Report -> str``, at most ~100 columns, deterministic. Shows the
program, coverage, validation outcome, the three bounds per architecture with
bottleneck and arithmetic intensity, headroom when a measurement of that device
exists (or why there is none), and what to do next: the top kernels ranked by their
gap to SOL when they were measured on that device (else by bound), each with the
roof that binds it and what would move it (Note [Next steps]).

Note [Next steps]
~~~~~~~~~~~~~~~~~
A kernel's advice follows from its roof: a memory-bound kernel that only streams
data (vector work) gets faster only by moving fewer bytes, so fusing it into its
producer or consumer; a memory-bound matmul needs more reuse or narrower operands;
a compute-bound matmul at an fp32/TF32 peak would run at the bf16 peak with bf16
operands; a compute-bound vector kernel needs fewer FLOPs. When fp32 matmuls carry
most of the bound, the summary suggests ``--precision bf16`` to see that bound.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from solar.diagnostics import printable
from solar.report.render_distributed import distributed_lines
from solar.report.render_profile import (
    LINE_W,
    breakdown_lines,
    column_notes,
    kernel_table,
    precision_hint,
)
from solar.report.schema import ArchBounds, KernelRow, Report, TrainingInfo
from solar.report.units import format_bytes, format_count, format_flops, format_time

__all__ = [
    "LAUNCH_LATENCY_S",
    "TOP_KERNELS",
    "format_bytes",
    "format_flops",
    "format_time",
    "next_step",
    "render_text",
    "tiny_bound_warnings",
]

TOP_KERNELS = 8
"""Kernels the summary lists by default (``solar analyze --top N``)."""

LAUNCH_LATENCY_S = 2e-6
"""A kernel launch costs a few microseconds on today's GPUs; bounds far below it are
real lower bounds but no implementation gets near them (Note [Tiny bounds])."""


def _intensity(flops_per_byte: float) -> str:
    """FLOPs per byte in at most 8 characters (``inf`` when no byte moves).

    >>> _intensity(10.66), _intensity(1.968e279)
    ('10.7', '1.97e+279')
    """
    return f"{flops_per_byte:.1f}" if flops_per_byte < 1e7 else f"{flops_per_byte:.3g}"


def _validation_line(report: Report) -> str:
    v = report.validation
    if v.status == "skipped":
        return f"validation: SKIPPED — {v.reason or 'no reference'}"
    sizes = ", ".join(f"{k}={n}" for k, n in sorted(v.sizes.items()))
    worst = max((o.max_abs_error or 0.0 for o in v.outputs), default=0.0)
    tol = v.outputs[0] if v.outputs else None
    tol_text = f", rtol {tol.rtol:.1e} atol {tol.atol:.1e}" if tol else ""
    head = f"validation: {v.status.upper()} ({v.strategy}"
    if v.dtype == "float64":  # Note [Float64 re-check] in solar/pipeline/validation.py
        head += ", in float64: the fp32 check failed"
    if v.fraction_checked < 1.0:
        head += f", {v.fraction_checked:.1%} of outputs checked"
    head += f"{tol_text}, max abs err {worst:.2e}, {v.wall_time_s:.2f} s)"
    if sizes:
        head += f"\n            at {sizes}"
    if v.reason:
        head += f"\n            {v.reason}"
    return head


def next_step(k: KernelRow) -> str:
    """What would move a kernel's bound (Note [Next steps]).

    >>> from solar.report.schema import KernelRow
    >>> k = KernelRow(name="gelu", flops=1.0, bytes=8.0, unit="vector", precision="fp32",
    ...               time_s=1e-6, bottleneck="memory", arithmetic_intensity_flops_per_byte=0.1)
    >>> next_step(k)
    'fuse it (streams data only)'
    """
    if k.bottleneck == "memory":
        if k.unit == "tensor":
            return "more reuse or bf16 operands"
        return "fuse it (streams data only)"
    if k.unit == "tensor":
        if k.precision in ("fp32", "tf32") or "x" in k.precision:
            return "bf16 operands (--precision bf16)"
        return "at the matrix peak: fewer FLOPs"
    return "fewer FLOPs per element"


def _headroom_lines(arch: ArchBounds, report: Report) -> list[str]:
    lines = []
    for h in arch.headroom:
        flag = "  <-- VIOLATION: bound above measured time" if h.violation else ""
        if h.model == "unfused" and h.ratio < 1.0:
            flag = "  (faster than any kernel-by-kernel execution: the code fuses kernels)"
        lines.append(f"  headroom vs {h.model:<11} {h.ratio:8.2f}x{flag}")
    m = report.measurement
    if m is not None and not arch.headroom and m.headroom_note:
        lines.append("  headroom: not computed —")
        lines.extend("    " + part for part in _wrap(m.headroom_note, 92))
    return lines


def _wrap_at_width(text: str) -> list[str]:
    """A line of the device block wrapped at the summary's width, continued under its text.

    >>> _wrap_at_width("  cache: " + "word " * 30)[1][:12]
    '         wor'
    """
    import textwrap

    return textwrap.wrap(text, LINE_W, subsequent_indent=" " * 9) or [""]


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def tiny_bound_warnings(archs: Sequence[ArchBounds]) -> list[str]:
    """A warning per device whose fused bound is below one kernel launch (Note [Tiny bounds]).

    Note [Tiny bounds]: such a bound is still a lower bound, but no implementation gets
    near it; at these sizes launch overhead, not the roofline, decides the time.
    """
    out = []
    for arch in archs:
        fused = next((b for b in arch.bounds if b.model == "fused"), None)
        if fused is not None and 0 < fused.time_s < LAUNCH_LATENCY_S:
            out.append(
                f"fused bound {format_time(fused.time_s)} on {arch.arch} is below one kernel "
                f"launch (~{LAUNCH_LATENCY_S * 1e6:.0f} µs): launch overhead decides"
            )
    return out


def _bound_notes(arch: ArchBounds, report: Report) -> list[str]:
    """What the bounds table alone does not say (Note [Tiny bounds], Note [Next steps])."""
    by_model = {b.model: b for b in arch.bounds}
    fused, unfused = by_model.get("fused"), by_model.get("unfused")
    lines = []  # a bound below one launch is a report warning (`tiny_bound_warnings`)
    if fused is not None and fused.dram_bytes == 0 and report.fused_dram_bytes > 0:
        lines.append(
            f"  note: DRAM bytes 0 B: the program's {format_bytes(report.fused_dram_bytes)} fit "
            "in the L2 under the warm-cache\n        assumption (repeated runs); "
            "--cache cold charges them to DRAM once"
        )
    if fused is not None and unfused is not None and unfused.dram_bytes < fused.dram_bytes:
        lines.append(  # Note [Warm cache] in docs/bounds.md: the unfused credit is per kernel
            "  note: unfused DRAM bytes below fused: the warm L2 is credited to each kernel "
            "alone;\n        every run still moves at least the fused DRAM bytes"
        )
    if fused is not None and unfused is not None and unfused.time_s > fused.time_s:
        gain = unfused.time_s - fused.time_s
        share = gain / unfused.time_s
        lever = ""
        if share >= 0.2:
            lever = ": fuse the memory-bound kernels"
        elif fused.bottleneck == "compute":  # only then does a faster roof move the bound
            lever = "; the compute roof is the bigger lever"
        lines.append(
            f"  fusion: gains at most {format_time(gain)} ({share:.0%} of unfused){lever}"
        )
    return lines


def _policy_assumption(arch: ArchBounds) -> list[str]:
    """What a reduced-precision policy assumes (Note [Precision what-if bytes] in
    `solar.bounds.recast`): the program cast to that dtype, compute roofs and bytes."""
    policy = arch.precision_policy
    if policy not in ("bf16", "fp16", "fp8"):
        return []
    size = 1 if policy == "fp8" else 2
    wider = "fp32, bf16 and fp16" if policy == "fp8" else "fp32"
    return [
        f"  precision: the program cast to {policy}: matmuls and convolutions at the {policy} "
        f"tensor peak,\n    {wider} tensors (inputs, parameters, activations, outputs) at "
        f"{size} byte{'s' if size > 1 else ''}; integer and fp64 tensors keep their dtype"
    ]


def _policy_reason(arch: ArchBounds, report: Report) -> list[str]:
    """Why the frontend chose the policy, when it did (JAX's DEFAULT matmul precision)."""
    tail = f": precision policy {arch.precision_policy}"
    return [f"  precision: {printable(n.removesuffix(tail))}"
            for n in report.frontend.notes if n.endswith(tail)]


def _arch_block(arch: ArchBounds, report: Report, top: int) -> list[str]:
    lines = [
        f"{arch.display_name} [{arch.arch}]"
        + (" (measured spec)" if arch.spec_measured else "")
        + f" — precision policy {arch.precision_policy}",
        *_wrap_at_width(f"  cache: {arch.cache_assumption}"),
        *_policy_assumption(arch),
        *_policy_reason(arch, report),
        f"  {'model':<12} {'bound':>12} {'compute':>12} {'memory':>12} {'DRAM bytes':>11} "
        f"{'AI F/B':>8}  bottleneck",
    ]
    for b in arch.bounds:
        lines.append(
            f"  {b.model:<12} {format_time(b.time_s):>12} {format_time(b.compute_time_s):>12} "
            f"{format_time(b.memory_time_s):>12} {format_bytes(b.dram_bytes):>11} "
            f"{_intensity(b.arithmetic_intensity_flops_per_byte):>8}  {b.bottleneck}"
        )
    lines.extend(column_notes(arch))
    lines.extend(_bound_notes(arch, report))
    lines.extend(_headroom_lines(arch, report))
    lines.extend(kernel_table(arch.kernels, top, next_step))
    lines.extend(breakdown_lines(arch, report.op_types, "op type", top))
    lines.extend(breakdown_lines(arch, report.modules, "module", top))
    lines.extend(precision_hint(arch))
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
        uncounted = sum(u.counted_flops is None for u in cov.uncovered)
        unknown = ""
        if flops is not None and uncounted:
            unknown = f" ({uncounted} uncovered op{'s' * (uncounted > 1)} with no FLOP count)"
        lines = [
            f"coverage: PARTIAL — {_share(cov.covered_bytes_fraction)} of tensor bytes"
            f"{flops_text} covered{unknown}; bounds cover the lowered part only"
        ]
        for u in cov.uncovered:
            counted = (
                ", FLOPs not counted"
                if u.counted_flops is None
                else f", {format_flops(u.counted_flops)}"
            )
            lines.append(
                f"  uncovered: {u.op} ×{u.count} ({_share(u.bytes_share)} of bytes{counted})"
            )
            # what inside a loop stopped it (Note [What stopped a loop] in jaxfe/driver.py)
            why = f"{u.op} uncovered:"
            lines += [f"    {n}" for n in report.frontend.notes if n.startswith(why)]
    lines.extend(_xla_lines(report))
    ind = cov.independent_flops
    if ind is not None:
        verdict = "!! SHORTFALL: SOLAR counts less" if ind.shortfall else "ok"
        if not ind.shortfall and ind.unseen_ops and ind.covered_flops < 0.9 * ind.solar_flops:
            names = ", ".join(ind.unseen_ops[:4])
            more = f" and {len(ind.unseen_ops) - 4} more" if len(ind.unseen_ops) > 4 else ""
            verdict = f"ok; the counter has no formula for {names}{more}"
        padding = f", {format_flops(ind.padding_flops)} over padding" if ind.padding_flops else ""
        if ind.masked_flops:
            padding += f", {format_flops(ind.masked_flops)} masked"
        sep = "\n    " if len(verdict) > 40 else " "
        lines.append(
            f"  FLOPs check vs {ind.counter.rsplit('.', 1)[-1]}: SOLAR "
            f"{format_flops(ind.solar_flops)}, counted {format_flops(ind.covered_flops)} "
            f"in covered ops{padding}{sep}({verdict})"
        )
    return lines


_XLA_NOTE = re.compile(r"^XLA cost_analysis \((?P<stage>\w+)\): .*\bflops (?P<flops>[-+.\deE]+)")


def _xla_lines(report: Report) -> list[str]:
    """XLA's own FLOP count beside SOLAR's (a JAX program's cross-check, from the
    frontend's notes): no verdict, XLA counts its own lowering (docs/jax.md)."""
    counts = {m["stage"]: float(m["flops"])
              for m in map(_XLA_NOTE.match, report.frontend.notes) if m}
    if not counts:
        return []
    theirs = ", ".join(f"{format_flops(v)} {stage}" for stage, v in sorted(counts.items()))
    return [f"  FLOPs check vs XLA cost_analysis: SOLAR {format_flops(report.flops)}, XLA "
            f"{theirs}"]


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


def _ir_line(report: Report) -> str:
    """The IR line; its kernel count agrees with the per-device kernel tables or says why."""
    ir = report.ir
    line = f"IR: {ir.kernels} kernels, {ir.statements} statements"
    why = []
    removed = ir.dead_kernels + ir.copy_kernels + ir.duplicate_kernels
    if removed:
        why.append(f"{ir.kernels - removed} bounded")
    if ir.dead_kernels:
        why.append(f"{ir.dead_kernels} compute values no output needs")
    if ir.copy_kernels:
        plural = "ies" if ir.copy_kernels != 1 else "y"
        why.append(f"{ir.copy_kernels} cop{plural} of a view, read through")
    if ir.duplicate_kernels:
        plural = "s" if ir.duplicate_kernels != 1 else ""
        why.append(f"{ir.duplicate_kernels} duplicate{plural} of earlier work, merged")
    if ir.alias_kernels:
        why.append(f"{ir.alias_kernels} free view" + ("s" if ir.alias_kernels != 1 else ""))
    if why:
        line += f" ({'; '.join(why)})"
    if ir.path:
        line += f", saved to {ir.path}"
    return line


def _sizes_line(report: Report) -> str | None:
    if not report.sizes:
        return None
    sizes = ", ".join(f"{k}={v}" for k, v in sorted(report.sizes.items()))
    sym = report.symbolic_sizes
    if sym:
        return f"sizes: {sizes} (formulas symbolic in {', '.join(sym)})"
    return f"sizes: {sizes}"


def _parameters_line(report: Report) -> str:
    """The parameter count; a training step's also holds the optimizer's state, which
    the line says (the training block splits it)."""
    head = (f"parameters: {format_count(report.parameters or 0)} elements, "
            f"{format_bytes(report.parameter_bytes or 0)}")
    t = report.training
    if t is None or not t.optimizer_state_bytes:
        return f"{head} (parameters and buffers)"
    return (f"{head} (parameters, buffers and the optimizer's state: the model's own are "
            f"{format_bytes(t.parameter_bytes)})")


def render_text(report: Report, *, top: int = TOP_KERNELS) -> str:
    """The terminal summary of a report.

    Args:
        report: the report.
        top: how many kernels the next-steps table lists per device.
    """
    lines = [
        f"SOLAR {report.tool.version} — {printable(report.program)} "
        f"({printable(report.input.path)}, "
        f"frontend {report.frontend.name}: {report.frontend.captured_with})",
        _ir_line(report),
    ]
    sizes_line = _sizes_line(report)
    if sizes_line:
        lines.append(sizes_line)
    lines.extend(_coverage_lines(report))
    lines.append(_validation_line(report))
    traffic = format_bytes(report.fused_dram_bytes)
    lines.append(
        f"work: {format_flops(report.flops)}; compulsory traffic {traffic} "
        "(inputs, parameters, outputs once)"
    )
    if report.parameters is not None:
        lines.append(_parameters_line(report))
    if report.measurement is not None:
        m = report.measurement
        lines.append(
            f"measured: {m.median_ms:.4g} ms median ({m.source}, {m.trials} trials"
            + (f", {m.device}" if m.device else "")
            + ")"
        )
    for arch in report.archs:
        lines.append("")
        lines.extend(_arch_block(arch, report, top))
    if report.training is not None:
        lines.append("")
        lines.extend(_training_block(report.training))
    if report.distributed is not None:
        lines.append("")
        lines.extend(distributed_lines(report.distributed))
    for w in report.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines) + "\n"
