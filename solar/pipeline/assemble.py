"""Assembly: a prepared, validated program's bounds dressed as a report.

Contract: ``PreparedProgram + specs + ValidationInfo -> ReportBase`` once per program
(`report_base`: compiled costs, formulas, IR text), then ``ReportBase + binding ->
PointBounds`` (`bounds_at`, a fraction of a millisecond) and ``-> Report``
(`report_at`), so a sweep over sizes costs one capture (docs/scale.md). Every bound of
a binding on a set of devices comes from `bound_devices`, which computes each model
once per device and the work line's cold fused bound once.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from solar.bounds import (
    Bound,
    BoundModel,
    CompiledCosts,
    bf16_what_if,
    compile_costs,
    compute_bound_set,
    fused_bound,
    symbolic_costs,
)
from solar.diagnostics import UsageError
from solar.einsum import EinsumGraph
from solar.frontends import FrontendResult, Progress
from solar.hw import HardwareSpec, device_matches_spec, mismatch_reason
from solar.ir import IntLit, Program, print_program, walk_stmts
from solar.measure import Timing, match_ops
from solar.options import CacheState, PrecisionPolicy
from solar.pipeline.options import AnalyzeOptions
from solar.pipeline.prepare import PreparedProgram
from solar.report import (
    ArchBounds,
    CoverageInfo,
    FrontendInfo,
    InputInfo,
    IRInfo,
    KernelTiming,
    Measurement,
    Report,
    ToolInfo,
    TrainingInfo,
    ValidationInfo,
    build_arch_bounds,
    coverage_info,
    tiny_bound_warnings,
    with_profile,
)
from solar.version import __version__

__all__ = [
    "MODELS_IN_ORDER",
    "DeviceBounds",
    "PointBounds",
    "ReportBase",
    "bound_arch",
    "bound_devices",
    "bounds_at",
    "free_sizes",
    "measurement",
    "report_at",
    "report_base",
]

log = logging.getLogger(__name__)

MODELS_IN_ORDER: tuple[BoundModel, ...] = ("unfused", "fused", "cache-aware")


# ---------------------------------------------------------------------------- bounds
@dataclass(frozen=True, slots=True)
class DeviceBounds:
    """Every bound model on each device at one binding, and the work line.

    Attributes:
        bounds: per device, its bounds in report order.
        work: the cold fused bound on the work device (FLOPs and compulsory bytes:
            device independent).
    """

    bounds: tuple[tuple[Bound, ...], ...]
    work: Bound


def bound_devices(
    compiled: CompiledCosts,
    specs: Sequence[HardwareSpec],
    *,
    precision: PrecisionPolicy,
    sizes: Mapping[str, int],
    cache: CacheState,
    work_spec: HardwareSpec | None = None,
) -> DeviceBounds:
    """The three models on every device of ``specs``, and the cold fused bound on
    ``work_spec`` (default: the first device; taken from its bounds when they are
    cold, so it is computed once).

    Raises:
        BoundError: no usable peak for the policy on a device (E0452).
    """
    sets = tuple(
        compute_bound_set(compiled, spec, models=MODELS_IN_ORDER, precision_policy=precision,
                          sizes=sizes, cache=cache)
        for spec in specs
    )  # fmt: skip
    work_on = work_spec if work_spec is not None else specs[0]
    if cache == "cold" and specs and work_on is specs[0]:
        work = next(b for b in sets[0] if b.model == "fused")
    else:
        work = fused_bound(compiled, work_on, precision_policy=precision, sizes=sizes,
                           cache="cold")
    return DeviceBounds(sets, work)


def bound_arch(
    graph: EinsumGraph | CompiledCosts,
    spec: HardwareSpec,
    *,
    precision: PrecisionPolicy,
    sizes: Mapping[str, int],
    measurement: Measurement | None = None,
    cache: CacheState = "warm",
) -> ArchBounds:
    """All three bound models of ``graph`` on one device, as a report row.

    Pass the graph's `CompiledCosts` (`solar.bounds.compile_costs`) when bounding it
    on several devices.
    """
    bounds = compute_bound_set(graph, spec, models=MODELS_IN_ORDER, precision_policy=precision,
                               sizes=sizes, cache=cache)
    return build_arch_bounds(spec, bounds, precision_policy=precision, cache=cache,
                             measurement=measurement)


def free_sizes(program: Program) -> dict[str, int]:
    """The sizes a program's formulas are symbolic in (its free sizes) and their values."""
    return {d.name: d.value.value for d in program.sizes if isinstance(d.value, IntLit)}


# ---------------------------------------------------------------------------- measurement
def measurement(
    front: FrontendResult,
    options: AnalyzeOptions,
    specs: Sequence[HardwareSpec],
    progress: Progress,
    kernels: Sequence[str] = (),
) -> Measurement | None:
    """The measured time, tied to the one analysed spec it is a measurement of.

    Note [Headroom on the measured device]: headroom is measured time over a bound of
    the *same* device. ``--measured-ms`` belongs to the ``--arch`` when exactly one is
    given; ``--measure`` times the local device, which belongs to a spec only when
    `solar.hw.device_matches_spec` says so (a calibrated spec of this host, or the GPU
    the spec names). Otherwise ``arch`` is ``None``, ``headroom_note`` says why, and no
    headroom is computed, gated or plotted.

    Raises:
        UsageError: E0905 a measured time that is not positive; E0906 ``--measure``
            for a frontend without a runnable program.
    """
    if options.measured_ms is not None:
        if not 0.0 < options.measured_ms < float("inf"):
            raise UsageError("--measured-ms must be positive and finite", code="E0905")
        if len(specs) == 1:
            return Measurement(source="user", median_ms=options.measured_ms, arch=specs[0].name)
        return Measurement(
            source="user", median_ms=options.measured_ms, arch=None,
            headroom_note="--measured-ms with several --arch: give the one device it was "
            "measured on as the only --arch to get headroom",
        )
    if not options.measure:
        return None
    if front.measure is None:
        raise UsageError(
            f"--measure is not available for the {front.name} frontend (no runnable program)",
            code="E0906",
        )
    progress("measuring the program on the local device")
    t: Timing = front.measure()
    match = next((s for s in specs if device_matches_spec(t.device, s)), None)
    note = None if match is not None else "; ".join(mismatch_reason(t.device, s) for s in specs[:1])
    return Measurement(
        source="measured",
        median_ms=t.median_ms,
        min_ms=t.min_ms,
        max_ms=t.max_ms,
        trials=t.trials,
        device=t.device,
        arch=match.name if match is not None else None,
        headroom_note=note,
        kernels=tuple(
            KernelTiming(op=op.op, index=i, time_ms=op.time_ms, kernel=kernel)
            for i, (op, kernel) in enumerate(match_ops(kernels, t.ops))
        ),
    )


# ---------------------------------------------------------------------------- report
@dataclass(frozen=True, slots=True)
class ReportBase:
    """What a report needs that no size binding or precision policy changes.

    Built once per program by `report_base` (compile, formulas, IR text, its hash and
    statement count, validation); `bounds_at` then bounds it at any binding of its
    free sizes in a fraction of a millisecond and `report_at` dresses that as a
    report, so a sweep over sizes costs one capture (docs/scale.md).
    """

    prepared: PreparedProgram
    source: InputInfo
    specs: tuple[HardwareSpec, ...]
    validation: ValidationInfo
    measurement: Measurement | None
    compiled: CompiledCosts
    flops_formula: str
    fused_bytes_formula: str
    ir_text: str
    training: TrainingInfo | None = None
    ir_sha256: str = ""
    statements: int = 0


def report_base(
    prepared: PreparedProgram,
    source: InputInfo,
    specs: Sequence[HardwareSpec],
    validation: ValidationInfo,
    *,
    measurement: Measurement | None = None,
    training: TrainingInfo | None = None,
) -> ReportBase:
    """Compile ``prepared``'s costs and formulas once, for `report_at`."""
    costs = symbolic_costs(prepared.graph, prepared.program.sizes)
    ir_text = print_program(prepared.program)
    statements = sum(1 for k in prepared.program.kernels for _ in walk_stmts(k.body))
    return ReportBase(
        prepared, source, tuple(specs), validation, measurement,
        compile_costs(prepared.graph), costs.flops, costs.fused_bytes, ir_text, training,
        hashlib.sha256(ir_text.encode()).hexdigest(), statements,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PointBounds:
    """Every bound of a `ReportBase` at one binding, policy and cache state
    (`bounds_at`): what a sweep's table row reads, and what `report_at` dresses as a
    report.

    Attributes:
        sizes: the binding (every size of the program).
        precision: the policy the bounds use (already the effective one).
        cache: the cache state they assume.
        bounds: per device of ``base.specs``, its bounds in report order.
        work: the cold fused bound on the first device (the report's FLOPs and
            compulsory bytes, device independent).
        coverage: the report's coverage section at this binding.
    """

    sizes: Mapping[str, int]
    precision: PrecisionPolicy
    cache: CacheState
    bounds: tuple[tuple[Bound, ...], ...]
    work: Bound
    coverage: CoverageInfo


def bounds_at(
    base: ReportBase, sizes: Mapping[str, int], *, precision: PrecisionPolicy, cache: CacheState
) -> PointBounds:
    """The bounds of ``base`` at the binding ``sizes`` (every size of the program,
    `solar.ir.resolve_sizes`) under ``precision`` (already the effective policy).

    Raises:
        BoundError: no usable peak for the policy on a device (E0452).
    """
    front = base.prepared.front
    start = time.monotonic()
    point = bound_devices(base.compiled, base.specs, precision=precision, sizes=sizes,
                          cache=cache)
    log.debug("bounds took %.4f s", time.monotonic() - start)
    coverage = coverage_info(
        front.ops_total, front.uncovered,
        counted_flops=front.counted_flops if _at_analysed(base, sizes) else None,
        padding_flops=front.padding_flops,
        masked_flops=base.prepared.masked_flops,
        solar_flops=point.work.flops + base.compiled.graph.repeated_flops(point.work.sizes),
    )
    return PointBounds(sizes, precision, cache, point.bounds, point.work, coverage)


def _at_analysed(base: ReportBase, sizes: Mapping[str, int]) -> bool:
    return dict(sizes) == dict(base.prepared.sizes)


def report_at(base: ReportBase, point: PointBounds, options: AnalyzeOptions) -> Report:
    """The report of ``base`` at ``point`` (`bounds_at`); ``options`` says whether to
    embed the IR text and where it was saved."""
    prepared, program, front = base.prepared, base.prepared.program, base.prepared.front
    archs = tuple(
        build_arch_bounds(spec, bounds, precision_policy=point.precision, cache=point.cache,
                          measurement=base.measurement,
                          bf16=bf16_what_if(base.compiled, spec, precision=point.precision,
                                            sizes=point.sizes, cache=point.cache))
        for spec, bounds in zip(base.specs, point.bounds, strict=True)
    )
    at_analysed = _at_analysed(base, point.sizes)
    # a model file's own size constants, unless hand-written IR replaced its program
    own = program is front.program and front.source_sizes and at_analysed
    report = Report(
        tool=ToolInfo(version=__version__),
        input=base.source,
        frontend=FrontendInfo(
            name=front.name, captured_with=front.captured_with, notes=prepared.notes
        ),
        program=program.name,
        ir=IRInfo(
            sha256=base.ir_sha256,
            path=str(options.save_ir) if options.save_ir else None,
            kernels=len(program.kernels),
            statements=base.statements,
            alias_kernels=sum(1 for k in program.kernels if k.alias),
            dead_kernels=max(0, len(program.kernels) - len(prepared.graph.kernels)
                             - prepared.copy_kernels - prepared.duplicate_kernels),
            copy_kernels=prepared.copy_kernels,
            duplicate_kernels=prepared.duplicate_kernels,
            text=base.ir_text if options.include_ir else None,
        ),
        sizes=dict(sorted((front.source_sizes if own else point.sizes).items())),
        symbolic_sizes=tuple(free_sizes(program)),
        coverage=point.coverage,
        validation=base.validation,
        flops=point.work.flops,
        flops_formula=base.flops_formula,
        fused_dram_bytes=point.work.dram_bytes,
        fused_bytes_formula=base.fused_bytes_formula,
        archs=archs,
        measurement=base.measurement,
        training=base.training if at_analysed else None,
        warnings=_warnings(point.coverage, base.validation, archs),
    )
    return with_profile(report, front, program, point.sizes)  # solar.report.breakdown


def _warnings(
    coverage: CoverageInfo, validation: ValidationInfo, archs: Sequence[ArchBounds]
) -> tuple[str, ...]:
    out = _coverage_warnings(coverage)
    if validation.status != "passed":
        out.append(f"validation {validation.status}: the IR is not confirmed to be the program")
    out.extend(tiny_bound_warnings(archs))
    if any(h.violation for a in archs for h in a.headroom):
        out.append("VIOLATION: a bound is above the measured time; this is a bug to report")
    return tuple(out)


def _coverage_warnings(coverage: CoverageInfo) -> list[str]:
    """Partial coverage, and SOLAR's FLOPs short of the independent count (loudly)."""
    out = []
    if not coverage.complete:
        flops = unknown = ""
        if coverage.uncovered_flops_fraction is not None:
            flops = f" and {coverage.uncovered_flops_fraction:.1%} of its counted FLOPs"
            uncounted = [u.op for u in coverage.uncovered if u.counted_flops is None]
            if uncounted:
                unknown = f" ({', '.join(uncounted)}: no FLOP count, their work is unknown)"
        out.append(
            f"partial coverage: {1 - coverage.covered_bytes_fraction:.1%} of the program's "
            f"tensor bytes{flops} are in ops SOLAR could not lower{unknown}; bounds cover the "
            "rest only"
        )
    ind = coverage.independent_flops
    if ind is not None and ind.shortfall:
        need = ind.covered_flops - ind.padding_flops - ind.masked_flops
        out.append(
            f"FLOP SHORTFALL: SOLAR counts {ind.solar_flops / 1e9:.4g} GFLOP but "
            f"{ind.counter} counts {need / 1e9:.4g} GFLOP in the ops SOLAR covers "
            f"(padding and masked work excluded; {1 - ind.solar_flops / need:.1%} short): work was "
            "dropped or mis-counted, so the bounds are too low; this is a bug to report"
        )
    return out
