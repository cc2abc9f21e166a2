"""Preparation: a source made into the program every command bounds.

Contract: ``Source + AnalyzeOptions -> FrontendResult`` (`load_program`, through the
frontend registry for files, ``--entry`` and live modules alike), then
``FrontendResult + AnalyzeOptions -> PreparedProgram`` (`prepare_program`).

Note [One preparation path]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
`solar analyze`, `solar bounds` (``compare``, ``provision``: `lift_source`), the sweep's
capture worker, the training phases of ``--train`` and the Python API all bound the
program `prepare_program` returns, and nothing after it changes which program that is.
It substitutes hand-written ``--ir``, verifies, binds sizes, decides the precision
policy, and makes the program the bounds see (`bounds_program`). That includes the
rewrite that needs values of the real run: a parameter whose captured values are an
index pattern (a registered ``tril`` buffer, a JAX ``arange`` constant) becomes an
index formula (`solar.validate.constant_params`), so its mask folds (Note [Constant masks]).
The values come from the frontend's reference provider, which runs the real program
once and remembers its plan (`RememberedReference`): validation then checks the same
run instead of running again, and a command without validation (``solar bounds``,
``--validate off``) still sees the values, so every command bounds the same program.
The provider runs only when a parameter could hold such a pattern; a reference run
that fails leaves the parameters as they are (validation reports the failure, with
the same error, without running again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from solar.diagnostics import SolarError, UsageError, ValidationMismatchError
from solar.einsum import Count, EinsumGraph, lift_to_einsum
from solar.files import MAX_IR_BYTES, check_input, read_text
from solar.frontends import (
    FrontendResult,
    Progress,
    ValidationPlan,
    get_frontend,
    get_module_frontend,
)
from solar.frontends.kit import reference_budget_bytes
from solar.frontends.kit.sorting import sorts_as_copies
from solar.ir import (
    DType,
    IntLit,
    Kernel,
    Program,
    elide_masked_work,
    eliminate_dead_code,
    eval_int,
    fill_generated,
    forward_copies,
    merge_duplicate_kernels,
    resolve_sizes,
    treat_as_intermediates,
    verify_program,
)
from solar.options import PrecisionPolicy
from solar.pipeline.options import AnalyzeOptions, EntrySource, FileSource, ModuleSource, Source

__all__ = [
    "BoundsProgram",
    "PreparedProgram",
    "RememberedReference",
    "bounds_program",
    "check_against_reference",
    "effective_precision",
    "load_program",
    "prepare_program",
    "quiet",
]


def quiet(_message: str) -> None:
    """A `Progress` that shows nothing."""
    return None


# ---------------------------------------------------------------------------- frontend
def load_program(
    source: Source, options: AnalyzeOptions, *, progress: Progress | None = None
) -> FrontendResult:
    """Run the frontend the registry gives for ``source`` and ``options.frontend``.

    Raises:
        UsageError: missing file (E0901), not a regular file (E0902), over
            `solar.files.MAX_TEXT_BYTES` (E0943), an entry without ``:`` or with a
            frontend that cannot import it (E0915), a missing optional dependency.
        FrontendError, IRSyntaxError, LLMError: the frontend's own diagnostics.
    """
    say, frontend_options = progress or quiet, options.frontend_options
    if options.ir_file is not None:
        check_input(options.ir_file, max_bytes=MAX_IR_BYTES)
    match source:
        case FileSource(path):
            check_input(path)  # a FIFO, a device or a huge file fails here, unread
            return get_frontend(options.frontend, path).load(
                path, frontend_options, progress=say, check=check_against_reference
            )
        case EntrySource(entry):
            if ":" not in entry:
                raise UsageError(
                    "give a model file, or --entry package.module:attr (PyTorch) without one",
                    code="E0915",
                )
            return get_module_frontend(options.frontend).load(
                None, frontend_options, progress=say, check=check_against_reference
            )
        case ModuleSource(module, example_inputs, kwargs):
            return get_module_frontend(options.frontend).load_module(
                module, example_inputs, frontend_options, progress=say,
                check=check_against_reference, kwargs=kwargs,
            )  # fmt: skip


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


def effective_precision(front: FrontendResult, requested: PrecisionPolicy) -> PrecisionPolicy:
    """The policy the bounds use: the program's own hint when the user left ``default``."""
    return front.precision_hint if front.precision_hint and requested == "default" else requested


# ---------------------------------------------------------------------------- the reference
class RememberedReference:
    """A reference provider that runs once and keeps its plan, or its error (Note [One
    preparation path]): preparation reads constant buffers from the plan, validation
    checks it."""

    def __init__(self, build: Callable[[], ValidationPlan]) -> None:
        self._build = build
        self._plan: ValidationPlan | None = None
        self._error: SolarError | None = None

    def __call__(self) -> ValidationPlan:
        """The plan (built on the first call).

        Raises:
            SolarError: what building it raised (the first time, and again after).
        """
        if self._error is not None:
            raise self._error
        if self._plan is None:
            try:
                self._plan = self._build()
            except SolarError as err:
                self._error = err
                raise
        return self._plan

    @property
    def plan(self) -> ValidationPlan | None:
        """The plan, when it was built."""
        return self._plan

    def forget(self) -> None:
        """Build again on the next call (validation re-plans within more memory)."""
        self._plan, self._error = None, None


def _reference_for(
    program: Program, reference: Callable[[], ValidationPlan] | None
) -> Callable[[], ValidationPlan] | None:
    """``reference``, with its values (and its float64 re-check's) compared against
    ``program`` instead."""
    if reference is None:
        return None
    base = reference

    def substituted() -> ValidationPlan:
        plan = base()
        wide = plan.float64
        return replace(plan, program=program,
                       float64=None if wide is None else lambda: replace(wide(), program=program))

    return substituted


# ---------------------------------------------------------------------------- preparation
@dataclass(frozen=True, slots=True)
class PreparedProgram:
    """A frontend's program made ready for validation and bounds (Note [One preparation path]).

    Attributes:
        front: the frontend's result.
        program: the program analysed: hand-written ``--ir`` if given, else the frontend's.
        reference: the frontend's reference provider, for ``program``, run at most once.
        notes: the frontend's notes and what the pipeline adds (XLA figures, ``--ir``,
            constant masks and buffers).
        sizes: every size of ``program``, bound.
        precision: the precision policy the bounds use (the program's own hint when the
            user left ``default``).
        bounds_program: the program the bounds see (`bounds_program`).
        graph: the einsum graph of ``bounds_program``.
        copy_kernels: kernels of ``program`` that only copy a view and are read through
            for the bounds (Note [Copies] in `solar.ir.passes`).
        duplicate_kernels: kernels of ``program`` that compute the same values as an
            earlier one, whose readers read the earlier one's result for the bounds (Note
            [Duplicate kernels] in `solar.ir.passes`).
        masked_flops: contraction FLOPs a constant mask hides, at ``sizes`` (Note
            [Masked FLOPs]).
    """

    front: FrontendResult
    program: Program
    reference: RememberedReference | None
    notes: tuple[str, ...]
    sizes: dict[str, int]
    precision: PrecisionPolicy
    bounds_program: Program
    graph: EinsumGraph
    copy_kernels: int = 0
    duplicate_kernels: int = 0
    masked_flops: float = 0.0


def prepare_program(
    front: FrontendResult, options: AnalyzeOptions, progress: Progress | None = None
) -> PreparedProgram:
    """``--ir`` substitution -> verify -> sizes -> precision -> constant parameters ->
    the bounds' program -> lift (Note [One preparation path]).

    Raises:
        IRSyntaxError: the ``--ir`` file does not parse.
        IRVerifyError: the program is malformed or a size binding is invalid.
        UsageError: ``--ir`` with a frontend other than torch (E0904).
    """
    say = progress or quiet
    program, reference, notes = _substitute_ir(front, options)
    verify_program(program)
    sizes = resolve_sizes(program, front.ir_sizes)
    precision = effective_precision(front, options.precision)
    remembered = RememberedReference(reference) if reference is not None else None
    validating = options.validate != "off"
    rewritten = _with_constant_params(
        program, remembered, say,
        affordable=validating or _fits_reference(program, sizes, options),
        symbolic=validating,
    )  # fmt: skip
    say("lifting to einsum graph")
    bounds = bounds_program(front, rewritten)
    if bounds.masked:
        notes = (*notes, _MASK_NOTE)
    if rewritten is not program:
        params = {t.name for t in program.tensors if t.role == "param"}
        names = [t.name for t in rewritten.tensors if t.role == "temp" and t.name in params]
        notes = (*notes, "constant buffers: parameters whose captured values follow an index "
                 f"pattern ({', '.join(names)}) are computed from indices, not read")
    return PreparedProgram(
        front, program, remembered, notes, sizes, precision, bounds.program,
        lift_to_einsum(bounds.program), copy_kernels=bounds.copies,
        duplicate_kernels=bounds.duplicates, masked_flops=bounds.masked_flops.evaluate(sizes),
    )  # fmt: skip


def _substitute_ir(
    front: FrontendResult, options: AnalyzeOptions
) -> tuple[Program, Callable[[], ValidationPlan] | None, tuple[str, ...]]:
    """The program analysed, its reference and the notes so far: hand-written ``--ir``
    replaces a traced program (offered for PyTorch sources)."""
    notes = (*front.notes, *_xla_notes(front))
    if options.ir_file is None:
        return front.program, front.reference, notes
    if front.name != "torch":
        raise UsageError(
            f"--ir replaces the program traced from a PyTorch model file; the {front.name} "
            "frontend does not take it",
            code="E0904",
        )
    text = read_text(options.ir_file, max_bytes=MAX_IR_BYTES)
    from solar.ir import parse_program  # lark loads only when IR text is parsed

    program = parse_program(text, filename=str(options.ir_file))
    notes = (*notes, f"bounds computed from hand-written IR {options.ir_file}")
    return program, _reference_for(program, front.reference), notes


def _xla_notes(front: FrontendResult) -> tuple[str, ...]:
    """XLA's cost analysis (JAX), one note per compilation stage."""
    notes = []
    if front.xla_unavailable is not None:
        notes.append(f"XLA cost analysis unavailable: {front.xla_unavailable}")
    for stage, figures in sorted((front.xla_cost_analysis or {}).items()):
        parts = ", ".join(f"{k} {v:.4g}" for k, v in sorted(figures.items()))
        notes.append(f"XLA cost_analysis ({stage}): {parts}")
    return tuple(notes)


_MASK_NOTE = (
    "constant values: tensors whose values depend only on indices (fills, `tril`/`triu` "
    "masks) are computed from indices, not read, and work such a mask hides (masked-out "
    "scores, their softmax terms and products) is not charged (docs/bounds.md, Note "
    "[Constant masks])"
)


def _with_constant_params(
    program: Program,
    reference: RememberedReference | None,
    progress: Progress,
    *,
    affordable: bool = True,
    symbolic: bool = True,
) -> Program:
    """``program`` with parameters whose captured values are an index pattern as index
    formulas (Note [One preparation path]); ``program`` itself when none is, when the
    real run is not available, or when it is not ``affordable`` (validation is off and
    the program does not fit the reference budget: a run nobody asked for would need a
    reduced-size search; the bounds then charge a constant mask dense, loose, not
    unsound). Parameters of symbolic shape are read only when ``symbolic`` (validation
    runs the program anyway); with validation off only a concrete-shaped one makes SOLAR
    run the program (``--validate off`` runs nothing it need not)."""
    if reference is None or not affordable or not _may_hold_pattern(program, symbolic):
        return program
    progress("computing reference outputs")
    try:
        plan = reference()
    except SolarError:  # remembered: validation reports it
        return program
    from solar.validate import constant_params  # the real run has paid for numpy's import

    return constant_params(program, plan.inputs)


def _fits_reference(program: Program, sizes: Mapping[str, int], options: AnalyzeOptions) -> bool:
    """Whether every tensor of ``program`` at ``sizes`` fits the reference budget (a
    real run at these sizes needs no reduced-size search)."""
    total = 0
    for t in program.tensors:
        n = 1
        for d in t.shape:
            n *= eval_int(d, sizes)
        total += n * t.dtype.itemsize_bytes
    return total <= reference_budget_bytes(options.reference_budget_bytes)


def _may_hold_pattern(program: Program, symbolic: bool = True) -> bool:
    """Whether a parameter has a shape and type `solar.validate.constant_params` reads (a
    float or boolean matrix, or an integer vector). Its extents may be sizes: a buffer
    ``ones(L, L).tril()`` of a file's module constant ``L`` has the shape ``[L, L]``, and
    `constant_params` reads it only where the run's values have the shape at the program's
    sizes (issue 28 round 3: such a buffer stayed dense, 2x its minimum)."""
    for t in program.tensors:
        if t.role != "param" or not (symbolic or all(isinstance(d, IntLit) for d in t.shape)):
            continue
        numeric = t.dtype.is_float or t.dtype == DType.BOOL
        if (len(t.shape) >= 2 and numeric) or (len(t.shape) == 1 and not numeric):
            return True
    return False


@dataclass(frozen=True, slots=True)
class BoundsProgram:
    """The program the bounds see, and what was done to get it.

    Attributes:
        program: random draws as writes only, work a constant mask hides skipped,
            duplicates and copies read through, dead work removed, uncovered values as
            intermediates.
        masked: whether a constant mask applied.
        copies: copy kernels read through (dead only once their copies were).
        duplicates: kernels that repeat an earlier one's work (dead only once merged).
        masked_flops: the contraction FLOPs the mask hides (Note [Masked FLOPs]).
    """

    program: Program
    masked: bool
    copies: int
    duplicates: int
    masked_flops: Count


def bounds_program(front: FrontendResult, program: Program) -> BoundsProgram:
    """The program the bounds see (`BoundsProgram`)."""
    keep = frozenset(front.keep_live)
    # masks first: a draw filled with zeros would read as a constant mask; duplicates
    # before the fills: two draws filled with zeros would read as one (Note [Duplicate
    # kernels])
    if front.name == "jax":  # sorts without their rank counts (Note [Sort ranks])
        program = sorts_as_copies(program)
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
    return BoundsProgram(
        treat_as_intermediates(p, front.uncovered_values),
        masked=unmasked is not program,
        copies=unforwarded - len(p.kernels),
        duplicates=unmerged - unforwarded,
        masked_flops=masked_contraction_flops(program, unmasked),
    )


# Note [Masked FLOPs]
# ~~~~~~~~~~~~~~~~~~~
# A constant causal mask leaves the masked-out scores uncomputed (Note [Constant masks]):
# ``Q K^T``, ``P V`` and their backward products are charged over the kept triangle, a
# lower bound on the work, while torch's FLOP counter charges the dense ``bmm``. Like
# the convolution taps over zero padding (Note [Padding FLOPs]), that difference is no
# dropped work, so the FLOPs check (Note [FLOP shortfall]) subtracts it: the contraction
# FLOPs of the kernels the mask rewrote, before the rewrite less after it. Only
# contractions count: the counter sees nothing else.


def masked_contraction_flops(before: Program, after: Program) -> Count:
    """The contraction FLOPs ``after`` (``before`` with masked work skipped, same
    kernels by name) leaves out: each rewritten kernel lifted alone, before and after."""
    if after is before:
        return Count.of(0)
    old = {k.name: k for k in before.kernels}
    changed = [(old[k.name], k) for k in after.kernels if k.name in old and old[k.name] != k]
    if not changed:
        return Count.of(0)

    def contraction_flops(program: Program, kernels: tuple[Kernel, ...]) -> Count:
        graph = lift_to_einsum(replace(program, kernels=kernels))
        return Count.total(n.flops for n in graph.nodes if n.work == "contraction")

    dense = contraction_flops(before, tuple(b for b, _ in changed))
    return (dense - contraction_flops(after, tuple(a for _, a in changed))).clamp0()
