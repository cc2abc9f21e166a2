"""The SOLAR pipeline: the one place where the stages are composed.

Contract: ``source file + AnalyzeOptions -> Report``. It reads top to bottom::

    front = load_program(path, options)          # frontend -> Program (+ reference, coverage)
    verify_program(front.program)                # well-formedness
    validation = validate_front(front, options)  # execute the IR, compare with the real outputs
    graph = lift_to_einsum(front.program)        # einsum graph, symbolic counts
    archs = [bound_arch(graph, spec, ...)]       # unfused / fused / cache-aware per device
    report = Report(...)                         # versioned JSON

Frontend adapters (torch, jax, llm, ir) live in `solar.frontends.adapters`; this
module only sequences them.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from solar import __version__
from solar.bounds import BOUND_MODELS, Bound, BoundModel, compute_bounds, symbolic_costs
from solar.diagnostics import UsageError
from solar.einsum import EinsumGraph, lift_to_einsum
from solar.frontends.adapters import FrontendOutput, ValidationPlan, load_program
from solar.hw import HardwareSpec, load_hardware_spec
from solar.ir import (
    Program,
    eliminate_dead_code,
    print_program,
    resolve_sizes,
    treat_as_intermediates,
    verify_program,
    walk_stmts,
)
from solar.measure import Timing
from solar.report import (
    ArchBounds,
    BoundResult,
    FrontendInfo,
    Headroom,
    InputInfo,
    IRInfo,
    KernelRow,
    Measurement,
    OutputError,
    Report,
    ToolInfo,
    ValidationInfo,
)

__all__ = [
    "AnalyzeOptions",
    "FrontendName",
    "ValidateMode",
    "analyze",
    "analyze_front",
    "analyze_module",
    "bound_arch",
    "lift_source",
    "validate_front",
]

log = logging.getLogger(__name__)

FrontendName = Literal["auto", "torch", "jax", "llm", "ir"]
ValidateMode = Literal["auto", "full", "sampled", "off"]
MODELS_IN_ORDER: tuple[BoundModel, ...] = ("unfused", "fused", "cache-aware")


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """Everything `analyze` needs besides the source path (mirrors the CLI flags)."""

    archs: tuple[str, ...] = ("H100_SXM",)
    precision: str = "default"
    cache: Literal["warm", "cold"] = "warm"
    frontend: FrontendName = "auto"
    ir_file: Path | None = None
    sizes: Mapping[str, int] = field(default_factory=dict)
    validate: ValidateMode = "auto"
    time_budget_s: float = 60.0
    reference_budget_bytes: int = 256 << 20  # real runs above this are re-captured smaller
    measured_ms: float | None = None
    measure: bool = False
    entry: str | None = None
    inputs_file: Path | None = None
    reference_file: Path | None = None
    train: bool = False
    include_ir: bool = False
    save_ir: Path | None = None
    llm: object | None = None  # solar.frontends.llm.LLMConfig (typed loosely: optional extra)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count_statements(program: Program) -> int:
    return sum(1 for k in program.kernels for _ in walk_stmts(k.body))


# ---------------------------------------------------------------------------- validation
def validate_front(
    front: FrontendOutput, options: AnalyzeOptions, progress: Callable[[str], None]
) -> ValidationInfo:
    """Run the IR against the source program's own outputs, as the options say."""
    if options.validate == "off":
        return ValidationInfo(
            status="skipped",
            strategy="none",
            sizes={},
            fraction_checked=0.0,
            reason="validation disabled (--validate off)",
        )
    if front.reference is None:
        return ValidationInfo(
            status="skipped",
            strategy="none",
            sizes={},
            fraction_checked=0.0,
            reason=front.no_reference_reason or "no source program to compare against",
        )
    from solar.validate import validate  # only when validating (its import is not free)

    progress("computing reference outputs")
    plan: ValidationPlan = front.reference()
    progress(f"validating IR ({plan.strategy})")
    strategy = "sampled" if options.validate == "sampled" else "auto"
    if options.validate == "full":
        strategy = "full"
    result = validate(
        plan.program,
        plan.inputs,
        plan.outputs,
        strategy=strategy,  # type: ignore[arg-type]
        time_budget_s=options.time_budget_s,
        reference_at=plan.reference_at,
    )
    outputs = tuple(
        OutputError(
            name=o.name,
            passed=o.status == "ok",
            max_abs_error=_finite(o.max_abs_error),
            max_rel_error=_finite(o.max_rel_error),
            rtol=o.tolerance.rtol,
            atol=o.tolerance.atol,
        )
        for o in result.outputs
    )
    reason_parts = [p for p in (plan.description, result.reason, result.mismatch) if p]
    ran = result.strategy or "none"
    if plan.strategy == "reduced-sizes" and ran == "full":
        ran = "reduced-sizes"
    return ValidationInfo(
        status=result.status,
        strategy=ran,
        sizes={**plan.sizes, **dict(result.sizes)},
        fraction_checked=float(result.checked_fraction),
        outputs=outputs,
        wall_time_s=float(result.wall_time_s),
        reason="; ".join(reason_parts) or None,
    )


def _finite(value: float | None) -> float | None:
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return None
    return float(value)


# ---------------------------------------------------------------------------- bounds
def _roofs(spec: HardwareSpec) -> dict[str, float]:
    roofs = {f"tensor:{p.value}": v for p, v in spec.peak_flops_per_s.items()}
    roofs.update({f"vector:{p.value}": v for p, v in spec.vector_flops_per_s.items()})
    return dict(sorted(roofs.items()))


def _intensity(b: Bound) -> float:
    """FLOPs per DRAM byte; per L2 byte when the bound moves nothing through DRAM (warm)."""
    moved = b.dram_bytes or float(getattr(b, "l2_bytes", 0.0) or 0.0)
    return b.flops / moved if moved > 0 else 0.0


def _bound_result(b: Bound) -> BoundResult:
    return BoundResult(
        model=b.model,
        time_s=b.time_s,
        compute_time_s=b.compute_time_s,
        compute_time_s_by_unit=dict(sorted(b.compute_time_s_by_unit.items())),
        memory_time_s=b.memory_time_s,
        flops=b.flops,
        dram_bytes=b.dram_bytes,
        l2_bytes=float(getattr(b, "l2_bytes", 0.0) or 0.0),
        arithmetic_intensity_flops_per_byte=_intensity(b),
        bottleneck=b.bottleneck,
        assumptions=tuple(b.assumptions),
    )


def _kernel_rows(b: Bound) -> tuple[KernelRow, ...]:
    rows = []
    for k in b.kernels:
        total_bytes = k.dram_bytes + float(getattr(k, "l2_bytes", 0.0) or 0.0)
        unit, _, prec = str(k.precision).partition(":")  # pipe labels read "tensor:tf32"
        rows.append(
            KernelRow(
                name=k.name,
                flops=k.flops,
                bytes=total_bytes,
                unit=unit if prec else str(k.unit),
                precision=prec or unit,
                time_s=k.time_s,
                bottleneck=k.bottleneck,
                arithmetic_intensity_flops_per_byte=k.flops / total_bytes if total_bytes else 0.0,
            )
        )
    return tuple(rows)


def _headroom(
    bounds: Sequence[Bound], measurement: Measurement | None, spec: HardwareSpec
) -> tuple[Headroom, ...]:
    if measurement is None:
        return ()
    if measurement.arch is not None and measurement.arch.lower() != spec.name.lower():
        return ()
    measured_s = measurement.median_ms / 1e3
    out = []
    for b in bounds:
        if b.time_s <= 0:
            continue
        ratio = measured_s / b.time_s
        # fused and cache-aware bound every implementation; unfused bounds only executions
        # that launch each kernel separately, so beating it means the code fuses kernels.
        out.append(Headroom(model=b.model, ratio=ratio,
                            violation=ratio < 1.0 and b.model != "unfused"))
    return tuple(out)


def bound_arch(
    graph: EinsumGraph,
    spec: HardwareSpec,
    *,
    precision: str,
    sizes: Mapping[str, int],
    measurement: Measurement | None = None,
    cache: Literal["warm", "cold"] = "warm",
) -> ArchBounds:
    """All three bound models of ``graph`` on one device, as a report row."""
    bounds = [
        compute_bounds(
            graph,
            spec,
            model=m,
            precision_policy=precision,  # type: ignore[arg-type]
            sizes=sizes,
            cache=cache,
        )
        for m in MODELS_IN_ORDER
        if m in BOUND_MODELS
    ]
    unfused = next(b for b in bounds if b.model == "unfused")
    l2 = spec.l2_capacity_bytes
    l2_text = f"{l2 / 2**20:.0f} MiB L2" if l2 else "L2 of unknown size"
    if cache == "warm":
        cache_text = (
            f"warm: up to the {l2_text} may hold the program's data at the start "
            "(repeated runs); the rest moves through DRAM"
        )
    else:
        cache_text = (
            f"cold: every first touch comes from DRAM; data reused across kernels "
            f"may stay in the {l2_text}"
        )
    return ArchBounds(
        arch=spec.name,
        display_name=spec.display_name,
        spec_measured=spec.measured,
        precision_policy=precision,
        cache_assumption=cache_text,
        peak_flops_per_s=_roofs(spec),
        dram_bandwidth_bytes_per_s=spec.dram_bandwidth_bytes_per_s,
        l2_bandwidth_bytes_per_s=spec.l2_bandwidth_bytes_per_s,
        bounds=tuple(_bound_result(b) for b in bounds),
        kernels=_kernel_rows(unfused),
        headroom=_headroom(bounds, measurement, spec),
    )


def _measurement(
    front: FrontendOutput, options: AnalyzeOptions, progress: Callable[[str], None]
) -> Measurement | None:
    if options.measured_ms is not None:
        if not options.measured_ms > 0:
            raise UsageError("--measured-ms must be positive", code="E0905")
        arch = options.archs[0] if len(options.archs) == 1 else None
        return Measurement(source="user", median_ms=options.measured_ms, arch=arch)
    if not options.measure:
        return None
    if front.measure is None:
        raise UsageError(
            f"--measure is not available for the {front.name} frontend (no runnable program)",
            code="E0906",
        )
    progress("measuring the program on the local device")
    t: Timing = front.measure()
    return Measurement(
        source="measured",
        median_ms=t.median_ms,
        min_ms=t.min_ms,
        max_ms=t.max_ms,
        trials=t.trials,
        device=t.device,
        arch=options.archs[0] if len(options.archs) == 1 else None,
    )


# ---------------------------------------------------------------------------- analyze
def _bounds_program(front: FrontendOutput, program: Program | None = None) -> Program:
    """The program the bounds see: dead work removed, uncovered values as intermediates."""
    p = eliminate_dead_code(program or front.program, keep=front.keep_live)
    return treat_as_intermediates(p, front.uncovered_values)



def lift_source(
    path: Path, options: AnalyzeOptions, *, progress: Callable[[str], None] | None = None
) -> tuple[FrontendOutput, EinsumGraph, dict[str, int]]:
    """Frontend → verify → lift, without validation (for bounds/compare/provision)."""
    front = load_program(path, options, progress=progress)
    verify_program(front.program)
    sizes = resolve_sizes(front.program, front.ir_sizes)
    return front, lift_to_einsum(_bounds_program(front)), sizes


def analyze(
    path: Path,
    options: AnalyzeOptions,
    *,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Run frontend → verify → validate → lift → bounds → report for one source file.

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, spec, usage).
    """
    say = progress or (lambda _msg: None)
    specs = [load_hardware_spec(a) for a in options.archs]  # fail fast on a bad --arch
    if not specs:
        raise UsageError("give at least one --arch", code="E0907")
    say(f"loading {path} ({options.frontend} frontend)")
    front = load_program(path, options, progress=say)
    source = InputInfo(path=str(path), sha256=_sha256(path.read_bytes()), entry=options.entry)
    return analyze_front(front, source, specs, options, say)


def analyze_module(
    module: object,
    example_inputs: Sequence[object],
    options: AnalyzeOptions | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """`analyze` for a live ``torch.nn.Module`` (or callable) and its example inputs.

    Raises:
        SolarError: any stage's diagnostic.
    """
    from solar.frontends.adapters import module_frontend

    options = options or AnalyzeOptions()
    say = progress or (lambda _msg: None)
    specs = [load_hardware_spec(a) for a in options.archs]
    front = module_frontend(module, example_inputs, options, say)
    name = type(module).__name__
    source = InputInfo(path=f"<module {name}>", sha256=_sha256(name.encode()), entry=None)
    return analyze_front(front, source, specs, options, say)


def analyze_front(
    front: FrontendOutput,
    source: InputInfo,
    specs: Sequence[HardwareSpec],
    options: AnalyzeOptions,
    say: Callable[[str], None],
) -> Report:
    """Verify → validate → lift → bounds → report for a frontend's result."""
    if front.precision_hint and options.precision == "default":
        options = replace(options, precision=front.precision_hint)
    program = front.program
    verify_program(program)
    sizes = resolve_sizes(program, front.ir_sizes)
    validation = validate_front(front, options, say)
    say("lifting to einsum graph and computing bounds")
    start = time.monotonic()
    graph = lift_to_einsum(_bounds_program(front, program))
    measurement = _measurement(front, options, say)
    archs = tuple(
        bound_arch(
            graph,
            spec,
            precision=options.precision,
            sizes=sizes,
            measurement=measurement,
            cache=options.cache,
        )
        for spec in specs
    )
    log.info("bounds took %.2f s", time.monotonic() - start)
    costs = symbolic_costs(graph)
    # The report's work line uses the cold compulsory traffic (device independent).
    fused = compute_bounds(
        graph,
        specs[0],
        model="fused",
        precision_policy=options.precision,  # type: ignore[arg-type]
        sizes=sizes,
        cache="cold",
    )
    ir_text = print_program(program)
    if options.save_ir is not None:
        options.save_ir.parent.mkdir(parents=True, exist_ok=True)
        options.save_ir.write_text(ir_text, encoding="utf-8")
    warnings = list(front.warnings)
    if not front.coverage.complete:
        warnings.append(
            f"partial coverage: {1 - front.coverage.covered_bytes_fraction:.1%} of the program's "
            "tensor bytes are in ops SOLAR could not lower; bounds cover the rest only"
        )
    if validation.status != "passed":
        warnings.append(
            f"validation {validation.status}: the IR is not confirmed to be the program"
        )
    if any(h.violation for a in archs for h in a.headroom):
        warnings.append("VIOLATION: a bound is above the measured time; this is a bug to report")
    return Report(
        tool=ToolInfo(version=__version__),
        input=source,
        frontend=FrontendInfo(
            name=front.name,  # type: ignore[arg-type]
            captured_with=front.captured_with,
            notes=tuple(front.notes),
        ),
        program=program.name,
        ir=IRInfo(
            sha256=_sha256(ir_text.encode()),
            path=str(options.save_ir) if options.save_ir else None,
            kernels=len(program.kernels),
            statements=_count_statements(program),
            text=ir_text if options.include_ir else None,
        ),
        sizes=dict(sorted(sizes.items())),
        coverage=front.coverage,
        validation=validation,
        flops=fused.flops,
        flops_formula=costs.flops,
        fused_dram_bytes=fused.dram_bytes,
        fused_bytes_formula=costs.fused_bytes,
        archs=archs,
        measurement=measurement,
        warnings=tuple(warnings),
    )
