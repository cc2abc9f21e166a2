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
from solar.diagnostics import FrontendError, UsageError, ValidationMismatchError
from solar.einsum import EinsumGraph, lift_to_einsum
from solar.files import MAX_IR_BYTES, check_input, read_text, write_atomic
from solar.frontends import (
    FrontendOptions,
    FrontendResult,
    Progress,
    ValidationPlan,
    get_frontend,
)
from solar.hw import (
    HardwareSpec,
    device_matches_spec,
    load_hardware_spec,
    mismatch_reason,
)
from solar.ir import (
    DType,
    IntLit,
    Program,
    elide_masked_work,
    eliminate_dead_code,
    fill_generated,
    float_dtypes,
    forward_copies,
    merge_duplicate_kernels,
    print_program,
    resolve_sizes,
    treat_as_intermediates,
    verify_program,
    walk_stmts,
    widen_to_f64,
)
from solar.measure import Timing, match_ops
from solar.options import (
    DEFAULT_ARCH,
    CacheState,
    FrontendChoice,
    OptimizerChoice,
    PrecisionPolicy,
    ValidateMode,
)
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
    float64_validation,
    skipped_validation,
    tiny_bound_warnings,
    validation_info,
)

if TYPE_CHECKING:
    from solar.distributed import DistributedRequest
    from solar.frontends.inputs import InputShape
    from solar.frontends.llm import LLMConfig

__all__ = [
    "AnalyzeOptions",
    "PointBounds",
    "PreparedProgram",
    "ReboundCosts",
    "ReportBase",
    "analyze",
    "analyze_front",
    "analyze_module",
    "bound_arch",
    "bounds_at",
    "check_against_reference",
    "costs_at",
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
    # real runs above this are re-captured smaller; None: a share of MemAvailable
    reference_budget_bytes: int | None = None
    measured_ms: float | None = None
    measure: bool = False
    entry: str | None = None
    entry_args: str | None = None  # JSON list/object that builds the entry
    inputs_file: Path | None = None
    input_shapes: tuple[InputShape, ...] = ()
    reference_file: Path | None = None
    train: bool = False
    train_step: bool = False
    optimizer: OptimizerChoice = "auto"
    include_ir: bool = False
    save_ir: Path | None = None
    llm: LLMConfig | None = None
    distributed: DistributedRequest | None = None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _count_statements(program: Program) -> int:
    return sum(1 for k in program.kernels for _ in walk_stmts(k.body))


# ---------------------------------------------------------------------------- frontend
def load_program(
    path: Path | None, options: AnalyzeOptions, *, progress: Progress | None = None
) -> FrontendResult:
    """Run the frontend ``options.frontend`` (or the one ``auto`` picks) on ``path``;
    with ``path=None``, import ``options.entry = "pkg.module:attr"`` (PyTorch).

    Raises:
        UsageError: missing file (E0901), not a regular file (E0902), over
            `solar.files.MAX_TEXT_BYTES` (E0943), E0915 neither a file nor a
            ``pkg.module:attr`` entry, or a missing optional dependency.
        FrontendError, IRSyntaxError, LLMError: the frontend's own diagnostics.
    """
    if path is None:
        entry = options.entry or ""
        if ":" not in entry or options.frontend not in ("auto", "torch"):
            raise UsageError(
                "give a model file, or --entry package.module:attr (PyTorch) without one",
                code="E0915",
            )
        from solar.frontends.pytorch import TorchFrontend

        (progress or _quiet)(f"importing {entry} (torch frontend)")
        return TorchFrontend().load(
            None, _frontend_options(options), progress=progress or _quiet,
            check=check_against_reference,
        )  # fmt: skip
    check_input(path)  # a FIFO, a device or a huge file fails here, unread
    if options.ir_file is not None:
        check_input(options.ir_file, max_bytes=MAX_IR_BYTES)
    frontend = get_frontend(options.frontend, path)
    return frontend.load(
        path, _frontend_options(options), progress=progress or _quiet, check=check_against_reference
    )


def _frontend_options(options: AnalyzeOptions) -> FrontendOptions:
    return FrontendOptions(
        entry=options.entry,
        entry_args=options.entry_args,
        inputs_file=options.inputs_file,
        input_shapes=options.input_shapes,
        reference_file=options.reference_file,
        sizes=options.sizes,
        train=options.train,
        train_step=options.train_step,
        optimizer=options.optimizer,
        reference_budget_bytes=options.reference_budget_bytes,
        time_budget_s=options.time_budget_s,
        llm=options.llm,
        # the tracer asks the LLM for the ops it cannot lower only where it was chosen
        # or may be (`auto`); an explicit --frontend llm translates the whole program
        op_fallback=options.frontend in ("auto", "torch"),
        # a plan is bounded at the sizes given; formulas in them would cost a
        # re-capture per size constant of a model that may have a hundred layers
        symbolic_sizes=options.distributed is None,
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
        copy_kernels: kernels of ``program`` that only copy a view and are read through
            for the bounds (Note [Copies] in `solar.ir.passes`).
        duplicate_kernels: kernels of ``program`` that compute the same values as an
            earlier one, whose readers read the earlier one's result for the bounds (Note
            [Duplicate kernels] in `solar.ir.passes`).
    """

    front: FrontendResult
    program: Program
    reference: Callable[[], ValidationPlan] | None
    notes: tuple[str, ...]
    sizes: dict[str, int]
    precision: PrecisionPolicy
    graph: EinsumGraph
    copy_kernels: int = 0
    duplicate_kernels: int = 0


def prepare_program(
    front: FrontendResult, options: AnalyzeOptions, progress: Progress | None = None
) -> PreparedProgram:
    """``--ir`` substitution -> verify -> sizes -> precision decision -> lift.

    Raises:
        IRSyntaxError: the ``--ir`` file does not parse.
        IRVerifyError: the program is malformed or a size binding is invalid.
        UsageError: ``--ir`` with a frontend other than torch (E0904).
    """
    program, reference, notes = front.program, front.reference, (*front.notes, *_xla_notes(front))
    # hand-written IR replaces a traced program (offered for PyTorch sources)
    if options.ir_file is not None and front.name != "torch":
        raise UsageError(
            f"--ir replaces the program traced from a PyTorch model file; the {front.name} "
            "frontend does not take it",
            code="E0904",
        )
    if options.ir_file is not None:
        text = read_text(options.ir_file, max_bytes=MAX_IR_BYTES)
        from solar.ir import parse_program  # lark loads only when IR text is parsed

        program = parse_program(text, filename=str(options.ir_file))
        notes = (*notes, f"bounds computed from hand-written IR {options.ir_file}")
        reference = _reference_for(program, front.reference)
    verify_program(program)
    sizes = resolve_sizes(program, front.ir_sizes)
    precision = effective_precision(front, options.precision)
    (progress or _quiet)("lifting to einsum graph")
    bounds = _bounds_program(front, program)
    if bounds.masked:
        notes = (*notes, _MASK_NOTE)
    graph = lift_to_einsum(bounds.program)
    if reference is not None:
        reference = _RememberedReference(reference)
    return PreparedProgram(
        front,
        program,
        reference,
        notes,
        sizes,
        precision,
        graph,
        copy_kernels=bounds.copies,
        duplicate_kernels=bounds.duplicates,
    )


_MASK_NOTE = (
    "constant values: tensors whose values depend only on indices (fills, `tril`/`triu` "
    "masks) are computed from indices, not read, and work such a mask hides (masked-out "
    "scores, their softmax terms and products) is not charged (docs/bounds.md, Note "
    "[Constant masks])"
)


class _RememberedReference:
    """A reference provider that keeps the plan it built (validation runs it once; the
    bounds then read the captured values of constant buffers from it)."""

    def __init__(self, build: Callable[[], ValidationPlan]) -> None:
        self._build = build
        self.plan: ValidationPlan | None = None

    def __call__(self) -> ValidationPlan:
        if self.plan is None:
            self.plan = self._build()
        return self.plan


def _with_constant_params(prepared: PreparedProgram) -> PreparedProgram:
    """Re-lift with parameters whose captured values are an index pattern (a registered
    ``tril`` buffer) as index formulas, when validation has run the real program."""
    ref = prepared.reference
    plan = ref.plan if isinstance(ref, _RememberedReference) else None
    if plan is None:
        return prepared
    from solar.validate import constant_params  # validation has run: its import is paid

    program = constant_params(prepared.program, plan.inputs)
    if program is prepared.program:
        return prepared
    bounds = _bounds_program(prepared.front, program)
    notes = prepared.notes
    if bounds.masked and _MASK_NOTE not in notes:
        notes = (*notes, _MASK_NOTE)
    notes = (*notes, "constant buffers: parameters whose captured values follow an index "
             "pattern (" + ", ".join(t.name for t in program.tensors if t.role == "temp"
                                     and any(p.name == t.name and p.role == "param"
                                             for p in prepared.program.tensors))
             + ") are computed from indices, not read")
    graph = lift_to_einsum(bounds.program)
    return replace(
        prepared,
        notes=notes,
        graph=graph,
        copy_kernels=bounds.copies,
        duplicate_kernels=bounds.duplicates,
    )


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


@dataclass(frozen=True, slots=True)
class _BoundsProgram:
    """The program the bounds see, and what was done to get it.

    Attributes:
        program: random draws as writes only, work a constant mask hides skipped,
            duplicates and copies read through, dead work removed, uncovered values as
            intermediates.
        masked: whether a constant mask applied.
        copies: copy kernels read through (dead only once their copies were).
        duplicates: kernels that repeat an earlier one's work (dead only once merged).
    """

    program: Program
    masked: bool
    copies: int
    duplicates: int


def _bounds_program(front: FrontendResult, program: Program) -> _BoundsProgram:
    """The program the bounds see (`_BoundsProgram`)."""
    keep = frozenset(front.keep_live)
    # masks first: a draw filled with zeros would read as a constant mask; duplicates
    # before the fills: two draws filled with zeros would read as one (Note [Duplicate
    # kernels])
    unmasked = elide_masked_work(program, keep=keep)
    merged = merge_duplicate_kernels(unmasked, keep=keep)
    filled = fill_generated(merged, front.generated_values)
    copied = forward_copies(filled, keep=keep)  # Note [Copies]
    p = eliminate_dead_code(copied, keep=front.keep_live)
    # the kernels dead only once their duplicates were merged, then their copies read through
    unforwarded = len(p.kernels)
    if copied is not filled:
        unforwarded = len(eliminate_dead_code(filled, keep=front.keep_live).kernels)
    unmerged = unforwarded
    if merged is not unmasked:
        unfilled = fill_generated(unmasked, front.generated_values)
        unmerged = len(eliminate_dead_code(unfilled, keep=front.keep_live).kernels)
    return _BoundsProgram(
        treat_as_intermediates(p, front.uncovered_values),
        masked=unmasked is not program,
        copies=unforwarded - len(p.kernels),
        duplicates=unmerged - unforwarded,
    )


# ---------------------------------------------------------------------------- validation
def validate_front(
    prepared: PreparedProgram, options: AnalyzeOptions, progress: Progress
) -> ValidationInfo:
    """Run the IR against the source program's own outputs, as the options say.

    A program that cannot be checked within the default validation memory is planned
    again within ``MemAvailable``'s shares (Note [Validation memory] in `solar.budget`).
    """
    from solar.budget import memory_pool_is_default, uncapped_validation_memory

    info = _validate_once(prepared, options, progress)
    reason = (info.reason or "").lower()
    if not (info.status == "skipped" and options.validate != "off"
            and prepared.reference is not None and memory_pool_is_default()
            and options.reference_budget_bytes is None
            and any(w in reason for w in ("e0511", "e0514", "e0305", "memory"))):
        return info
    progress("over the 1 GiB validation memory: planning again within MemAvailable")
    if isinstance(prepared.reference, _RememberedReference):
        prepared.reference.plan = None
    with uncapped_validation_memory():
        wide = _validate_once(prepared, options, progress)
    if wide.status == "skipped":
        return info
    note = ("checked within MemAvailable: the program does not fit the 1 GiB validation "
            "memory (SOLAR_VALIDATION_MEMORY=1024 keeps the cap and skips)")
    return wide.model_copy(update={"reason": f"{wide.reason}; {note}" if wide.reason
                                   else note})


def _validate_once(
    prepared: PreparedProgram, options: AnalyzeOptions, progress: Progress
) -> ValidationInfo:
    if options.validate == "off":
        return skipped_validation("validation disabled (--validate off)")
    if prepared.reference is None:
        return skipped_validation(
            prepared.front.no_reference_reason or "no source program to compare against"
        )
    from solar.validate import validate  # only when validating (its import is not free)

    progress("computing reference outputs")
    try:
        plan = prepared.reference()
    except FrontendError as err:
        # Note [Validation never blocks analysis]: under ``auto`` a program whose real
        # run cannot be made to fit (or diverges from its capture) is still analysed;
        # the report says why it was not validated. ``--validate full`` insists.
        if options.validate != "auto":
            raise
        notes = list(err.notes)
        if err.code in ("E0511", "E0514") and options.reference_budget_bytes is None:
            notes.append(_MORE_MEMORY)
        return skipped_validation(
            f"no reference run: error[{err.code}]: {'; '.join((err.message, *notes))}"
        )
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
        memory_budget_bytes=_executor_budget(options),
    )
    info = validation_info(
        result, planned_strategy=plan.strategy, description=plan.description, sizes=plan.sizes
    )
    if result.status == "failed":
        return _recheck_in_float64(plan, info, strategy, options, progress)
    return info


# Note [Float64 re-check]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The tolerance policy (docs/validation.md) scales with the longest reduction feeding an
# output, not with how much the computation amplifies rounding. A deep stack of
# training-mode batch norms over a small batch (ResNet-50's step at batch 2 on 64x64
# images: the last stage normalises 8 values per channel, and each backward subtracts
# means of nearly equal terms) amplifies the rounding of every layer below, so two
# correct fp32 implementations (numpy's and torch's summation orders) differ beyond it,
# on a few elements of many outputs (ResNet-50: 254 of 645). That is the program's
# conditioning, not the IR, and taking the rounding away tells the two apart: when the
# fp32 comparison of a program whose floating types are all f32 fails, the frontend runs
# the program again in float64 (a float64 copy of the model, the same inputs,
# parameters, optimizer state and seeded draws, cast exactly), the IR is widened to f64
# (`widen_to_f64`: the same statements, every f32 made f64) and the two are compared at
# the float64 tolerance (base rtol 1e-9: rounding ~1e-16 amplified as in fp32 stays far
# below it, while a wrong lowering still differs by its own relative error). The report
# then describes the float64 check (``dtype: float64``, its outputs, tolerances, errors,
# sizes) and keeps the fp32 one (``fp32_check``: its errors, failing outputs and why it
# was not accepted). A program with a type narrower than f32 (f16, bf16, f8) rounds on
# purpose and is not re-checked: widening it would change what it computes; nor is a
# mismatch that is not finite (an fp32 overflow the wider range would hide). Why not validate such
# steps in float64 directly: the fp32 check is the evidence for the program as it runs,
# and 25 of the zoo's 33 steps pass it; the re-check costs a second real run and check
# only where fp32 fails (a wrong IR pays it too, and fails twice). docs/validation.md
# § Float64 re-check has the rest.


def _recheck_in_float64(
    plan: ValidationPlan,
    fp32: ValidationInfo,
    strategy: Literal["auto", "full", "sampled"],
    options: AnalyzeOptions,
    progress: Progress,
) -> ValidationInfo:
    """Note [Float64 re-check]: ``fp32`` if it cannot apply, else the float64 check."""
    dtypes = float_dtypes(plan.program)
    if plan.float64 is None or DType.F32 not in dtypes or not dtypes <= {DType.F32, DType.F64}:
        return fp32
    from solar.validate import validate

    def unchecked(why: str) -> ValidationInfo:
        reason = "; ".join(p for p in (fp32.reason, f"float64 re-check not run: {why}") if p)
        return fp32.model_copy(update={"reason": reason})

    if any(o.max_abs_error is None for o in fp32.outputs if not o.passed):
        # an overflow or NaN where the program has a finite value (or a missing output)
        # is no rounding error, and float64 could hide an fp32 overflow
        return unchecked("the fp32 mismatch is not finite (overflow, NaN or a missing "
                         "output), which rounding does not explain")
    progress("fp32 validation failed: re-checking in float64")

    try:
        inputs, outputs = plan.float64()
    except FrontendError as err:
        return unchecked(f"error[{err.code}]: {err.message}")
    result = validate(
        widen_to_f64(plan.program),
        inputs,
        outputs,
        strategy=strategy,
        time_budget_s=options.time_budget_s,
    )
    if result.status not in ("passed", "failed"):
        return unchecked(f"{result.status}: {result.reason}")
    wide = validation_info(
        result, planned_strategy=plan.strategy, description=plan.description, sizes=plan.sizes
    )
    return float64_validation(fp32, wide)


_MORE_MEMORY = (
    "the budget is a share of the validation memory (Note [Validation memory]): "
    "SOLAR_VALIDATION_MEMORY=MiB (default 1024) or =available, or --reference-budget MiB, "
    "allows more"
)


def _executor_budget(options: AnalyzeOptions) -> int:
    """The executor's memory budget for a plan made within the reference budget (Note
    [Validation memory]); with ``--reference FILE`` half of MemAvailable: the user's
    data fixes the sizes, so there is nothing smaller to check."""
    from solar.budget import executor_budget_bytes, memory_budget_bytes
    from solar.frontends.kit import reference_budget_bytes

    if options.reference_file is not None:
        return memory_budget_bytes(capped=False)
    return executor_budget_bytes(reference_budget_bytes(options.reference_budget_bytes))


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
        need = ind.covered_flops - ind.padding_flops
        out.append(
            f"FLOP SHORTFALL: SOLAR counts {ind.solar_flops / 1e9:.4g} GFLOP but "
            f"{ind.counter} counts {need / 1e9:.4g} GFLOP in the ops SOLAR covers "
            f"(padding excluded; {1 - ind.solar_flops / need:.1%} short): work was "
            "dropped or mis-counted, so the bounds are too low; this is a bug to report"
        )
    return out


# ---------------------------------------------------------------------------- analyze
def lift_source(
    path: Path | None, options: AnalyzeOptions, *, progress: Progress | None = None
) -> PreparedProgram:
    """Frontend → prepare, without validation (for bounds/compare/provision).

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, usage).
    """
    front = load_program(path, options, progress=progress)
    return prepare_program(front, options, progress)


def analyze(
    path: Path | None,
    options: AnalyzeOptions,
    *,
    progress: Progress | None = None,
) -> Report:
    """Run frontend → verify → validate → lift → bounds → report for one source file.

    ``path`` may be ``None`` with ``options.entry = "pkg.module:attr"``: the entry is
    imported (PyTorch frontend) instead of a file.

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, spec, usage).
    """
    say = progress or _quiet
    specs = [load_hardware_spec(a) for a in options.archs]  # fail fast on a bad --arch
    if not specs:
        raise UsageError("give at least one --arch", code="E0907")
    if path is None:
        entry = options.entry or ""
        front = load_program(None, options, progress=say)
        source = InputInfo(path=f"<entry {entry}>", sha256=_sha256(entry.encode()), entry=entry)
        return analyze_front(front, source, specs, options, say)
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
    kwargs: Mapping[str, object] | None = None,
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
        kwargs=kwargs,
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
    prepared = _with_constant_params(prepared)
    measurement = _measurement(front, options, specs, say,
                               [k.name for k in prepared.graph.kernels])
    say("computing bounds")
    training = None
    if front.step is not None:
        say("bounding the training step's phases")
        training = _training_info(front, prepared, specs, options)
    base = report_base(prepared, source, specs, validation, measurement=measurement,
                       training=training)
    if options.save_ir is not None:
        write_atomic(options.save_ir, base.ir_text)
    report = report_at(base, prepared.sizes, options)
    if options.distributed is not None:
        say(f"bounding the plan on {options.distributed.cluster}")
        report = _with_distributed(report, prepared, options.distributed)
    return report


def _with_distributed(
    report: Report, prepared: PreparedProgram, request: DistributedRequest
) -> Report:
    """The report with its ``distributed`` section (docs/distributed.md)."""
    from solar.distributed import bound_prepared

    front = prepared.front
    info = bound_prepared(
        prepared.program, prepared.graph, prepared.sizes, request,
        phase_of=front.step.phase_of if front.step is not None else None,
        precision=prepared.precision, size_constants=front.source_sizes,
    )
    warnings = report.warnings
    if not info.memory.feasible:
        warnings += (f"plan {info.plan.label} does not fit: it needs at least "
                     f"{info.memory.total_bytes / 1e9:.1f} GB per GPU of "
                     f"{info.memory.capacity_bytes / 1e9:.1f} GB; no step bound is given",)
    return report.model_copy(update={"distributed": info, "warnings": warnings})


@dataclass(frozen=True, slots=True)
class ReportBase:
    """What a report needs that no size binding or precision policy changes.

    Built once per program by `report_base` (lift, compile, formulas, IR text, its
    hash and statement count, validation); `bounds_at` then bounds it at any binding
    of its free sizes in a fraction of a millisecond and `report_at` dresses that as a
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
    return ReportBase(
        prepared, source, tuple(specs), validation, measurement,
        compile_costs(prepared.graph), costs.flops, costs.fused_bytes,
        (ir_text := print_program(prepared.program)), training,
        _sha256(ir_text.encode()), _count_statements(prepared.program),
    )  # fmt: skip


def effective_precision(front: FrontendResult, requested: PrecisionPolicy) -> PrecisionPolicy:
    """The policy the bounds use: the program's own hint when the user left ``default``."""
    return front.precision_hint if front.precision_hint and requested == "default" else requested


@dataclass(frozen=True, slots=True)
class PointBounds:
    """Every bound of a `ReportBase` at one binding and policy (`bounds_at`): what a
    sweep's table row reads, and what `report_at` dresses as a report.

    Attributes:
        sizes: the binding (every size of the program).
        precision: the policy the bounds use (already the effective one).
        bounds: per device of ``base.specs``, its bounds in report order.
        work: the cold fused bound on the first device (the report's FLOPs and
            compulsory bytes, device independent).
        coverage: the report's coverage section at this binding.
    """

    sizes: Mapping[str, int]
    precision: PrecisionPolicy
    bounds: tuple[tuple[Bound, ...], ...]
    work: Bound
    coverage: CoverageInfo


def bounds_at(
    base: ReportBase, sizes: Mapping[str, int], *, precision: PrecisionPolicy, cache: CacheState
) -> PointBounds:
    """The bounds of ``base`` at the binding ``sizes`` (see `report_at`), without the
    report around them.

    Raises:
        BoundError: no usable peak for the policy on a device (E0452).
    """
    prepared, compiled = base.prepared, base.compiled
    front = prepared.front
    start = time.monotonic()
    bound_sets = tuple(
        _bound_set(compiled, spec, precision=precision, sizes=sizes, cache=cache)
        for spec in base.specs
    )
    # The report's work line uses the cold compulsory traffic (device independent).
    fused = _work_bound(compiled, base.specs[0], bound_sets[0], precision=precision,
                        sizes=sizes, cache=cache)
    log.debug("bounds took %.4f s", time.monotonic() - start)
    at_analysed = dict(sizes) == dict(prepared.sizes)
    coverage = coverage_info(
        front.ops_total, front.uncovered,
        counted_flops=front.counted_flops if at_analysed else None,
        padding_flops=front.padding_flops,
        solar_flops=fused.flops + compiled.graph.repeated_flops(fused.sizes),
    )
    return PointBounds(sizes, precision, bound_sets, fused, coverage)


def report_at(
    base: ReportBase,
    sizes: Mapping[str, int],
    options: AnalyzeOptions,
    *,
    point: PointBounds | None = None,
) -> Report:
    """The report of ``base`` at the binding ``sizes`` (every size of the program,
    `resolve_sizes`) under ``options.precision`` (already the effective policy).

    ``point``: ``bounds_at`` of the same binding, policy and cache, when the caller
    has it.

    Raises:
        BoundError: no usable peak for the policy on a device (E0452).
    """
    prepared, specs = base.prepared, base.specs
    front, program = prepared.front, prepared.program
    if point is None:
        point = bounds_at(base, sizes, precision=options.precision, cache=options.cache)
    archs = tuple(
        build_arch_bounds(spec, bounds, precision_policy=options.precision, cache=options.cache,
                          measurement=base.measurement)
        for spec, bounds in zip(specs, point.bounds, strict=True)
    )
    fused, coverage = point.work, point.coverage
    validation = base.validation
    at_analysed = dict(sizes) == dict(prepared.sizes)
    warnings = _coverage_warnings(coverage)
    if validation.status != "passed":
        warnings.append(
            f"validation {validation.status}: the IR is not confirmed to be the program"
        )
    warnings.extend(tiny_bound_warnings(archs))
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
            sha256=base.ir_sha256,
            path=str(options.save_ir) if options.save_ir else None,
            kernels=len(program.kernels),
            statements=base.statements,
            alias_kernels=sum(1 for k in program.kernels if k.alias),
            dead_kernels=max(
                0,
                len(program.kernels)
                - len(prepared.graph.kernels)
                - prepared.copy_kernels
                - prepared.duplicate_kernels,
            ),
            copy_kernels=prepared.copy_kernels,
            duplicate_kernels=prepared.duplicate_kernels,
            text=base.ir_text if options.include_ir else None,
        ),
        # a model file's own size constants, unless hand-written IR replaced its program
        sizes=dict(sorted(
            (front.source_sizes if program is front.program and front.source_sizes
             and at_analysed else sizes).items())),
        symbolic_sizes=tuple(free_sizes(program)),
        coverage=coverage,
        validation=validation,
        flops=fused.flops,
        flops_formula=base.flops_formula,
        fused_dram_bytes=fused.dram_bytes,
        fused_bytes_formula=base.fused_bytes_formula,
        archs=archs,
        measurement=base.measurement,
        training=base.training if at_analysed else None,
        warnings=tuple(warnings),
    )


def _training_info(
    front: FrontendResult,
    prepared: PreparedProgram,
    specs: Sequence[HardwareSpec],
    options: AnalyzeOptions,
) -> TrainingInfo:
    """Each phase of a training step bounded alone, and the step's memory (docs/training.md)."""
    from solar.report import PhaseArchBounds, PhaseBound, PhaseInfo
    from solar.training import split_phases, step_memory

    step = front.step
    assert step is not None
    program = _bounds_program(front, prepared.program).program
    phases = []
    for part in split_phases(program, step.phase_of):
        compiled = compile_costs(lift_to_einsum(part.program))
        archs = []
        for spec in specs:
            bounds = _bound_set(compiled, spec, precision=options.precision,
                                sizes=prepared.sizes, cache=options.cache)
            archs.append(PhaseArchBounds(arch=spec.name, bounds=tuple(
                PhaseBound(model=b.model, time_s=b.time_s, flops=b.flops,
                           dram_bytes=b.dram_bytes, bottleneck=b.bottleneck)
                for b in bounds
            )))
        work = fused_bound(compiled, specs[0], precision_policy=options.precision,
                           sizes=prepared.sizes, cache="cold")
        phases.append(PhaseInfo(phase=part.phase, kernels=len(part.program.kernels),
                                flops=work.flops, fused_dram_bytes=work.dram_bytes,
                                archs=tuple(archs)))
    mem = step_memory(program, step.phase_of, prepared.sizes)
    return TrainingInfo(
        loss=step.loss,
        optimizer=step.optimizer,
        phases=tuple(phases),
        parameter_bytes=mem.parameter_bytes,
        optimizer_state_bytes=mem.optimizer_state_bytes,
        gradient_bytes=mem.gradient_bytes,
        input_bytes=mem.input_bytes,
        saved_activation_bytes=mem.saved_activation_bytes,
        peak_bytes=mem.peak_bytes,
    )


# ---------------------------------------------------------------------------- re-binding
def free_sizes(program: Program) -> dict[str, int]:
    """The sizes a program's formulas are symbolic in (its free sizes) and their values."""
    return {d.name: d.value.value for d in program.sizes if isinstance(d.value, IntLit)}


@dataclass(frozen=True, slots=True)
class ReboundCosts:
    """A prepared program's costs at another size binding (`costs_at`).

    Attributes:
        sizes: every size of the program at the new binding (free and derived).
        flops: total FLOPs.
        fused_dram_bytes: compulsory traffic (inputs, parameters, outputs once; cold).
        archs: the three bounds per device, as report rows.
    """

    sizes: dict[str, int]
    flops: float
    fused_dram_bytes: float
    archs: tuple[ArchBounds, ...]


def costs_at(
    prepared: PreparedProgram,
    binding: Mapping[str, int],
    specs: Sequence[HardwareSpec] = (),
    *,
    cache: CacheState = "warm",
    compiled: CompiledCosts | None = None,
) -> ReboundCosts:
    """The costs and bounds of ``prepared`` at ``binding``, without capturing again.

    A traced program is symbolic in the model file's size constants where
    `solar.frontends.kit.symbolize_sizes` could confirm it (the report's
    ``symbolic_sizes``); an IR file in all its free sizes. Sizes left out of
    ``binding`` keep their analysed values.

    Args:
        prepared: the prepared program (`lift_source`, `prepare_program`).
        binding: new values of some free sizes.
        specs: devices to bound on (none: work figures only, on the default arch).
        cache: the cache state the bounds assume.
        compiled: ``compile_costs(prepared.graph)``, to reuse across calls.

    Returns:
        The costs at the new binding.

    Raises:
        UsageError: E0913, a name that is no size of the program; E0914, a size of the
            model file the formulas are constant in (re-capture with ``--set``).
        IRVerifyError: E0221, a size evaluates to a non-positive value.
    """
    free = free_sizes(prepared.program)
    source = prepared.front.source_sizes
    for name in binding:
        if name in free:
            continue
        if name in source:
            raise UsageError(
                f"size {name} is a constant in this analysis's formulas; analyse again "
                f"with --set {name}={binding[name]}",
                code="E0914",
                notes=(f"symbolic sizes: {', '.join(free) or 'none'}",),
            )
        known = ", ".join(sorted({*free, *source})) or "none"
        raise UsageError(f"{name} is no size of this program", code="E0913",
                         notes=(f"its sizes: {known}",))
    sizes = resolve_sizes(prepared.program, {**free, **binding})
    compiled = compiled if compiled is not None else compile_costs(prepared.graph)
    work_spec = specs[0] if specs else load_hardware_spec(DEFAULT_ARCH)
    work = fused_bound(compiled, work_spec, precision_policy=prepared.precision, sizes=sizes,
                       cache="cold")
    archs = tuple(
        bound_arch(compiled, spec, precision=prepared.precision, sizes=sizes, cache=cache)
        for spec in specs
    )
    return ReboundCosts(sizes, work.flops, work.dram_bytes, archs)
