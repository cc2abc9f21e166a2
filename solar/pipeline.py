"""The SOLAR pipeline: the one place where the stages are composed.

Contract: ``source file + AnalyzeOptions -> Report``. It reads top to bottom::

    front = load_program(path, options)             # frontend -> Program (+ reference, coverage)
    prepared = prepare_program(front, options)      # --ir, verify, sizes, precision, lift
    validation = validate_front(prepared, options)  # run the IR, compare with the real outputs
    archs = [bound_arch(prepared.graph, spec, ...)] # unfused / fused / cache-aware per device
    report = Report(...)                            # versioned JSON

Frontends (ir, torch, jax, llm) implement `solar.frontends.Frontend` and decide
nothing for later stages; every decision that follows from what a frontend observed
is taken here. Note [One preparation path]: `analyze` and `lift_source` (``solar
bounds``, ``compare``, ``provision``) prepare a program the same way, so every
command bounds the same program under the same precision policy.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from solar import __version__
from solar.bounds import (
    Bound,
    BoundModel,
    CompiledCosts,
    compile_costs,
    compute_bound_set,
    fused_bound,
    symbolic_costs,
)
from solar.diagnostics import UsageError, ValidationMismatchError
from solar.einsum import EinsumGraph, lift_to_einsum
from solar.files import read_text, write_atomic
from solar.frontends import (
    FrontendOptions,
    FrontendResult,
    Progress,
    ValidationPlan,
    get_frontend,
)
from solar.hw import HardwareSpec, load_hardware_spec
from solar.ir import (
    Program,
    eliminate_dead_code,
    parse_program,
    print_program,
    resolve_sizes,
    treat_as_intermediates,
    verify_program,
    walk_stmts,
)
from solar.measure import Timing
from solar.options import (
    DEFAULT_ARCH,
    CacheState,
    FrontendChoice,
    PrecisionPolicy,
    ValidateMode,
)
from solar.report import (
    ArchBounds,
    FrontendInfo,
    InputInfo,
    IRInfo,
    Measurement,
    Report,
    ToolInfo,
    ValidationInfo,
    build_arch_bounds,
    coverage_info,
    skipped_validation,
    validation_info,
)

if TYPE_CHECKING:
    from solar.frontends.llm import LLMConfig

__all__ = [
    "AnalyzeOptions",
    "PreparedProgram",
    "ReportBase",
    "analyze",
    "analyze_front",
    "analyze_module",
    "bound_arch",
    "check_against_reference",
    "effective_precision",
    "lift_source",
    "load_program",
    "prepare_program",
    "report_at",
    "report_base",
    "validate_front",
]

log = logging.getLogger(__name__)

MODELS_IN_ORDER: tuple[BoundModel, ...] = ("unfused", "fused", "cache-aware")


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """Everything `analyze` needs besides the source path (mirrors the CLI flags)."""

    archs: tuple[str, ...] = (DEFAULT_ARCH,)
    precision: PrecisionPolicy = "default"
    cache: CacheState = "warm"
    frontend: FrontendChoice = "auto"
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
    llm: LLMConfig | None = None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count_statements(program: Program) -> int:
    return sum(1 for k in program.kernels for _ in walk_stmts(k.body))


# ---------------------------------------------------------------------------- frontend
def load_program(
    path: Path, options: AnalyzeOptions, *, progress: Progress | None = None
) -> FrontendResult:
    """Run the frontend ``options.frontend`` (or the one ``auto`` picks) on ``path``.

    Raises:
        UsageError: missing file or optional dependency.
        FrontendError, IRSyntaxError, LLMError: the frontend's own diagnostics.
    """
    if not path.is_file():
        raise UsageError(f"no such file: {path}", code="E0901")
    frontend = get_frontend(options.frontend, path)
    return frontend.load(
        path, _frontend_options(options), progress=progress or _quiet, check=check_against_reference
    )


def _frontend_options(options: AnalyzeOptions) -> FrontendOptions:
    return FrontendOptions(
        entry=options.entry,
        inputs_file=options.inputs_file,
        reference_file=options.reference_file,
        sizes=options.sizes,
        train=options.train,
        reference_budget_bytes=options.reference_budget_bytes,
        time_budget_s=options.time_budget_s,
        llm=options.llm,
        # the tracer asks the LLM for the ops it cannot lower only where it was chosen
        # or may be (`auto`); an explicit --frontend llm translates the whole program
        op_fallback=options.frontend in ("auto", "torch"),
    )


def _quiet(_message: str) -> None:
    return None


def check_against_reference(
    program: Program,
    inputs: Mapping[str, np.ndarray],
    outputs: Mapping[str, np.ndarray],
    *,
    time_budget_s: float,
) -> None:
    """Accept IR a frontend produced only if it reproduces the reference outputs.

    Raises:
        ValidationMismatchError: E0311, saying which output differs and by how much.
    """
    from solar.validate import validate  # only when checking (its import is not free)

    result = validate(program, inputs, outputs, time_budget_s=time_budget_s)
    if result.status != "passed":
        raise ValidationMismatchError(
            result.mismatch or result.reason or f"validation {result.status}", code="E0311"
        )


def _xla_notes(front: FrontendResult) -> tuple[str, ...]:
    """XLA's cost analysis (JAX), one note per compilation stage."""
    notes = []
    if front.xla_unavailable is not None:
        notes.append(f"XLA cost analysis unavailable: {front.xla_unavailable}")
    for stage, figures in sorted((front.xla_cost_analysis or {}).items()):
        parts = ", ".join(f"{k} {v:.4g}" for k, v in sorted(figures.items()))
        notes.append(f"XLA cost_analysis ({stage}): {parts}")
    return tuple(notes)


# ---------------------------------------------------------------------------- preparation
@dataclass(frozen=True, slots=True)
class PreparedProgram:
    """A frontend's program made ready for validation and bounds (Note [One preparation path]).

    Attributes:
        front: the frontend's result.
        program: the program analysed: hand-written ``--ir`` if given, else the frontend's.
        reference: the frontend's reference provider, for ``program``.
        notes: the frontend's notes and what the pipeline adds (XLA figures, ``--ir``).
        sizes: every size of ``program``, bound.
        precision: the precision policy the bounds use (the program's own hint when the
            user left ``default``).
        graph: the einsum graph of the program the bounds see.
    """

    front: FrontendResult
    program: Program
    reference: Callable[[], ValidationPlan] | None
    notes: tuple[str, ...]
    sizes: dict[str, int]
    precision: PrecisionPolicy
    graph: EinsumGraph


def prepare_program(
    front: FrontendResult, options: AnalyzeOptions, progress: Progress | None = None
) -> PreparedProgram:
    """``--ir`` substitution -> verify -> sizes -> precision decision -> lift.

    Raises:
        IRSyntaxError: the ``--ir`` file does not parse.
        IRVerifyError: the program is malformed or a size binding is invalid.
    """
    program, reference, notes = front.program, front.reference, (*front.notes, *_xla_notes(front))
    # hand-written IR replaces a traced program (offered for PyTorch sources)
    if options.ir_file is not None and front.name == "torch":
        program = parse_program(read_text(options.ir_file), filename=str(options.ir_file))
        notes = (*notes, f"bounds computed from hand-written IR {options.ir_file}")
        reference = _reference_for(program, front.reference)
    verify_program(program)
    sizes = resolve_sizes(program, front.ir_sizes)
    precision = effective_precision(front, options.precision)
    (progress or _quiet)("lifting to einsum graph")
    graph = lift_to_einsum(_bounds_program(front, program))
    return PreparedProgram(front, program, reference, notes, sizes, precision, graph)


def _reference_for(
    program: Program, reference: Callable[[], ValidationPlan] | None
) -> Callable[[], ValidationPlan] | None:
    """``reference``, with its values compared against ``program`` instead."""
    if reference is None:
        return None
    base = reference

    def substituted() -> ValidationPlan:
        return replace(base(), program=program)

    return substituted


def _bounds_program(front: FrontendResult, program: Program) -> Program:
    """The program the bounds see: dead work removed, uncovered values as intermediates."""
    p = eliminate_dead_code(program, keep=front.keep_live)
    return treat_as_intermediates(p, front.uncovered_values)


# ---------------------------------------------------------------------------- validation
def validate_front(
    prepared: PreparedProgram, options: AnalyzeOptions, progress: Progress
) -> ValidationInfo:
    """Run the IR against the source program's own outputs, as the options say."""
    if options.validate == "off":
        return skipped_validation("validation disabled (--validate off)")
    if prepared.reference is None:
        return skipped_validation(
            prepared.front.no_reference_reason or "no source program to compare against"
        )
    from solar.validate import validate  # only when validating (its import is not free)

    progress("computing reference outputs")
    plan = prepared.reference()
    progress(f"validating IR ({plan.strategy})")
    strategy: Literal["auto", "full", "sampled"] = "auto"
    if options.validate == "full" or options.validate == "sampled":
        strategy = options.validate
    result = validate(
        plan.program,
        plan.inputs,
        plan.outputs,
        strategy=strategy,
        time_budget_s=options.time_budget_s,
    )
    return validation_info(
        result, planned_strategy=plan.strategy, description=plan.description, sizes=plan.sizes
    )


# ---------------------------------------------------------------------------- bounds
def _bound_set(
    graph: EinsumGraph | CompiledCosts,
    spec: HardwareSpec,
    *,
    precision: PrecisionPolicy,
    sizes: Mapping[str, int],
    cache: CacheState,
) -> tuple[Bound, ...]:
    """Every bound model on one device, in report order."""
    return compute_bound_set(graph, spec, models=MODELS_IN_ORDER, precision_policy=precision,
                             sizes=sizes, cache=cache)


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
    bounds = _bound_set(graph, spec, precision=precision, sizes=sizes, cache=cache)
    return build_arch_bounds(spec, bounds, precision_policy=precision, cache=cache,
                             measurement=measurement)


def _work_bound(
    compiled: CompiledCosts,
    spec: HardwareSpec,
    bounds: Sequence[Bound],
    *,
    precision: PrecisionPolicy,
    sizes: Mapping[str, int],
    cache: CacheState,
) -> Bound:
    """The cold fused bound on ``spec``, for the report's work line (FLOPs, compulsory
    bytes: device independent); taken from ``bounds`` (``spec``'s) when they are cold."""
    if cache == "cold":
        return next(b for b in bounds if b.model == "fused")
    return fused_bound(compiled, spec, precision_policy=precision, sizes=sizes, cache="cold")


def _measurement(
    front: FrontendResult, options: AnalyzeOptions, progress: Progress
) -> Measurement | None:
    if options.measured_ms is not None:
        if not 0.0 < options.measured_ms < float("inf"):
            raise UsageError("--measured-ms must be positive and finite", code="E0905")
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
def lift_source(
    path: Path, options: AnalyzeOptions, *, progress: Progress | None = None
) -> PreparedProgram:
    """Frontend → prepare, without validation (for bounds/compare/provision).

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, usage).
    """
    front = load_program(path, options, progress=progress)
    return prepare_program(front, options, progress)


def analyze(
    path: Path,
    options: AnalyzeOptions,
    *,
    progress: Progress | None = None,
) -> Report:
    """Run frontend → verify → validate → lift → bounds → report for one source file.

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, spec, usage).
    """
    say = progress or _quiet
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
    progress: Progress | None = None,
) -> Report:
    """`analyze` for a live ``torch.nn.Module`` (or callable) and its example inputs.

    Raises:
        SolarError: any stage's diagnostic.
    """
    from solar.frontends.pytorch import TorchFrontend

    options = options or AnalyzeOptions()
    say = progress or _quiet
    specs = [load_hardware_spec(a) for a in options.archs]
    front = TorchFrontend().load_module(
        module,
        example_inputs,
        _frontend_options(options),
        progress=say,
        check=check_against_reference,
    )
    name = type(module).__name__
    source = InputInfo(path=f"<module {name}>", sha256=_sha256(name.encode()), entry=None)
    return analyze_front(front, source, specs, options, say)


def analyze_front(
    front: FrontendResult,
    source: InputInfo,
    specs: Sequence[HardwareSpec],
    options: AnalyzeOptions,
    say: Progress,
) -> Report:
    """Prepare → validate → measure → bounds → report for a frontend's result."""
    prepared = prepare_program(front, options, say)
    options = replace(options, precision=prepared.precision)
    validation = validate_front(prepared, options, say)
    measurement = _measurement(front, options, say)
    if measurement is not None and measurement.arch is not None:  # the spec's name, not the alias
        measurement = measurement.model_copy(update={"arch": specs[0].name})
    say("computing bounds")
    base = report_base(prepared, source, specs, validation, measurement=measurement)
    if options.save_ir is not None:
        write_atomic(options.save_ir, base.ir_text)
    return report_at(base, prepared.sizes, options)


@dataclass(frozen=True, slots=True)
class ReportBase:
    """What a report needs that no size binding or precision policy changes.

    Built once per program by `report_base` (lift, compile, formulas, IR text,
    validation); `report_at` then bounds it at any binding of its free sizes in about
    a millisecond, so a sweep over sizes costs one capture (docs/scale.md).
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


def report_base(
    prepared: PreparedProgram,
    source: InputInfo,
    specs: Sequence[HardwareSpec],
    validation: ValidationInfo,
    *,
    measurement: Measurement | None = None,
) -> ReportBase:
    """Compile ``prepared``'s costs and formulas once, for `report_at`."""
    costs = symbolic_costs(prepared.graph)
    return ReportBase(
        prepared, source, tuple(specs), validation, measurement,
        compile_costs(prepared.graph), costs.flops, costs.fused_bytes,
        print_program(prepared.program),
    )  # fmt: skip


def effective_precision(front: FrontendResult, requested: PrecisionPolicy) -> PrecisionPolicy:
    """The policy the bounds use: the program's own hint when the user left ``default``."""
    return front.precision_hint if front.precision_hint and requested == "default" else requested


def report_at(base: ReportBase, sizes: Mapping[str, int], options: AnalyzeOptions) -> Report:
    """The report of ``base`` at the binding ``sizes`` (every size of the program,
    `resolve_sizes`) under ``options.precision`` (already the effective policy).

    Raises:
        BoundError: no usable peak for the policy on a device (E0452).
    """
    prepared, specs = base.prepared, base.specs
    front, program, compiled = prepared.front, prepared.program, base.compiled
    start = time.monotonic()
    bound_sets = [
        _bound_set(compiled, spec, precision=options.precision, sizes=sizes, cache=options.cache)
        for spec in specs
    ]
    archs = tuple(
        build_arch_bounds(spec, bounds, precision_policy=options.precision, cache=options.cache,
                          measurement=base.measurement)
        for spec, bounds in zip(specs, bound_sets, strict=True)
    )
    # The report's work line uses the cold compulsory traffic (device independent).
    fused = _work_bound(compiled, specs[0], bound_sets[0], precision=options.precision,
                        sizes=sizes, cache=options.cache)
    log.debug("bounds took %.4f s", time.monotonic() - start)
    validation = base.validation
    coverage = coverage_info(front.ops_total, front.uncovered)
    warnings = []
    if not coverage.complete:
        warnings.append(
            f"partial coverage: {1 - coverage.covered_bytes_fraction:.1%} of the program's "
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
        input=base.source,
        frontend=FrontendInfo(
            name=front.name, captured_with=front.captured_with, notes=prepared.notes
        ),
        program=program.name,
        ir=IRInfo(
            sha256=_sha256(base.ir_text.encode()),
            path=str(options.save_ir) if options.save_ir else None,
            kernels=len(program.kernels),
            statements=_count_statements(program),
            text=base.ir_text if options.include_ir else None,
        ),
        sizes=dict(sorted(sizes.items())),
        coverage=coverage,
        validation=validation,
        flops=fused.flops,
        flops_formula=base.flops_formula,
        fused_dram_bytes=fused.dram_bytes,
        fused_bytes_formula=base.fused_bytes_formula,
        archs=archs,
        measurement=base.measurement,
        warnings=tuple(warnings),
    )
