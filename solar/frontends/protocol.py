"""The frontend protocol: what every frontend is given and what it hands back.

Contract: ``Frontend.load(path, FrontendOptions, progress=, check=) -> FrontendResult``:
an unverified `Program`, its coverage, a *lazy* reference provider (the real program's
inputs and outputs by IR tensor name, possibly at reduced sizes), a lazy measurer, and
what the frontend observed (notes, a precision hint, tensors to keep alive). A
frontend decides nothing for the later stages: `solar.pipeline` verifies the program,
substitutes hand-written IR, applies the precision hint, validates, and builds the
report. Frameworks are imported inside the frontends, so a missing optional extra
only matters for the frontend that needs it.

Note [Model-file runs]
~~~~~~~~~~~~~~~~~~~~~~
A model file is *imported* (its top level executed) once per analysis: every later
build of the program at other sizes (the symbolic re-captures, each halving step of the
reduced-size reference search in `solar.frontends.kit.reduced_reference`, the reference
and ``--measure``) takes the same module with its size constants rebound (Note [One
import per file] in `solar.frontends.kit.loader`). A file that derives values from its
sizes while it is imported (``HIDDEN = 4 * D``, a shape tuple, a default argument) is
executed again as a fresh module whenever the sizes change, because a module that ran
once holds state derived from them; at the same sizes it is reused.

The model is *built* (its entry points called: ``Model(...)``, an ``--entry`` class or
factory, ``get_inputs``) once per distinct size binding it is captured at, over meta or
fake tensors (which allocates nothing), plus one real build for the reference (a build
over no values cannot give values). The first capture builds on meta; when meta
execution cannot run the forward, that same build is captured over fake tensors
(`loader.meta_to_fake`: its tensors made fake CPU ones, its attributes as they were
before the meta forward) and only a module holding meta tensors besides its
parameters and buffers, a training step, a batch cut or a float64 build is built again.
Every later capture (the symbolic re-captures, each step of the reduced-size search)
goes where the first one succeeded (Note [Meta re-captures] in
`solar.frontends.pytorch.capture`), one build each; in a guarded child each
re-capture runs in a process of its own (Note [Probes in a process of their own] in
`solar.guard`). The PyTorch frontend builds the program for real once for the
reference (full or reduced size: the search only estimates, and the reference runs at
the sizes it settles on); ``--measure`` times that build (timing does not depend on
parameter values, while the reference must see a pristine one, so it always comes
first), so it builds nothing more, though timing runs the forward once per warm-up,
trial and the profiled run; the float64 copy (Note [Float64 re-check] in
`solar.pipeline.validation`, only when the fp32 comparison fails) is a float64 copy of
that build when the reference left it as built (version counters), else a fresh float64
build (a training step updates the parameters); a capture that needs real values builds
for real. ``tests/frontends/pytorch/test_model_builds.py`` counts the builds, the
constructor's and forward's side effects (with and without ``--measure``) and the
float64 copy (gpt_block: 7 builds for 6 bindings, from 19). The LLM frontend builds it
once for its reference, its check and ``--measure``; the JAX frontend's capture holds
the function and its inputs, and it imports the file again at other sizes (``jax.jit``
traces made at import would keep the old ones).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from solar.diagnostics import FrontendError, UsageError
from solar.ir import Program

if TYPE_CHECKING:
    from solar.frontends.inputs import InputShape
    from solar.frontends.kit import UncoveredOp
    from solar.frontends.llm.config import LLMConfig
    from solar.measure import Timing
    from solar.options import FrontendName, OptimizerChoice, PrecisionPolicy
    from solar.training import StepInfo

__all__ = [
    "Arrays",
    "Frontend",
    "FrontendOptions",
    "FrontendResult",
    "ModuleFrontend",
    "PlanStrategy",
    "Progress",
    "RealRunCheck",
    "ReferenceCheck",
    "OptionName",
    "ValidationPlan",
    "refuse_unsupported",
    "require_extra",
    "require_python_file",
]

Arrays = dict[str, np.ndarray]
OptionName = Literal[
    "entry", "inputs_file", "input_shapes", "reference_file", "sizes", "train", "train_step",
    "optimizer",
]
"""A `FrontendOptions` field a frontend may or may not honour (`refuse_unsupported`)."""
PlanStrategy = Literal["full", "reduced-sizes", "reduced-batch"]
"""``full``: the reference is the program itself; ``reduced-sizes``: the frontend
re-lowered the program at sizes whose real run fits its budget; ``reduced-batch``: it
re-lowered the program with the leading (batch) dimension of its inputs cut."""
Progress = Callable[[str], None]
"""Receives one line per slow step (the CLI shows them on stderr)."""


class ReferenceCheck(Protocol):
    """The pipeline's check of a program against reference values (a frontend that
    must accept or reject IR, like the LLM's repair loop, calls it).

    Raises:
        ValidationMismatchError: E0311, saying which output differs and by how much.
    """

    def __call__(
        self,
        program: Program,
        inputs: Mapping[str, np.ndarray],
        outputs: Mapping[str, np.ndarray],
        *,
        time_budget_s: float,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class FrontendOptions:
    """What a frontend needs besides the source path.

    Attributes:
        entry: ``fn`` or ``module:fn`` to analyse instead of the file's ``Model``.
        entry_args: JSON list (positional) or object (keyword) of the arguments that
            build the entry, when it is a module class or a factory (``--entry-args``).
        inputs_file: ``.npz``/``.pt`` with the entry's inputs (positional and keyword).
        input_shapes: inputs given by shape (``--input-shape``), drawn seeded.
        reference_file: ``.npz`` with inputs and expected outputs (hand-written IR).
        sizes: size overrides: IR sizes, or module-level size constants of a model file.
        train: analyse the module in training mode (default: ``eval()``).
        train_step: analyse one training step: forward, loss, backward and optimizer
            update (docs/training.md); implies ``train``.
        optimizer: the update of a training step (``auto``: the file's own, else SGD).
        reference_budget_bytes: a real run above this is re-captured at reduced sizes;
            ``None``: a share of the validation memory (`solar.frontends.kit.
            reference_budget_bytes`, Note [Reference budget]).
        time_budget_s: budget of each check a frontend runs through `ReferenceCheck`.
        llm: the LLM to use (the ``llm`` frontend, the per-op fallback).
        op_fallback: ask ``llm`` for the ops the tracer cannot lower.
        symbolic_sizes: make a traced program symbolic in the file's size constants by
            re-capturing it (Note [Symbolic sizes by re-binding] in
            `solar.frontends.kit.symbolize`).
    """

    entry: str | None = None
    entry_args: str | None = None
    inputs_file: Path | None = None
    input_shapes: tuple[InputShape, ...] = ()
    reference_file: Path | None = None
    sizes: Mapping[str, int] = field(default_factory=dict)
    train: bool = False
    train_step: bool = False
    optimizer: OptimizerChoice = "auto"
    reference_budget_bytes: int | None = None
    time_budget_s: float = 60.0
    llm: LLMConfig | None = None
    op_fallback: bool = False
    symbolic_sizes: bool = True


@dataclass(frozen=True, slots=True)
class ValidationPlan:
    """What to execute and compare: possibly a re-lowered program at reduced sizes.

    Attributes:
        program: the program to execute.
        inputs: its inputs, parameters and constants by IR name.
        outputs: the real program's outputs by IR name.
        strategy: ``full``, or ``reduced-sizes``/``reduced-batch`` when the frontend
            re-lowered the program at smaller sizes (`solar.frontends.kit.
            reduced_reference`, `solar.frontends.kit.reduced_batch_reference`).
        description: for a reduced plan, what was scaled (the report shows it).
        sizes: the sizes the reference was produced at, for the report.
        float64: the same real run again with the model, its parameters, inputs and
            optimizer state in float64 (same seeds, same draws): the plan of the
            pipeline's re-check of an fp32 comparison that failed (Note [Float64
            re-check] in solar/pipeline/validation.py), whose ``program`` is run widened to
            f64 on its float64 ``inputs``; at this plan's sizes, or smaller where its
            widened check would not fit (Note [Float64 re-check size] in
            solar/frontends/pytorch/frontend.py); ``None`` where the frontend cannot run
            its program in float64.
    """

    program: Program
    inputs: Arrays
    outputs: Arrays
    strategy: PlanStrategy = "full"
    description: str = ""
    sizes: Mapping[str, int] = field(default_factory=dict)
    float64: Callable[[], ValidationPlan] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class RealRunCheck:
    """A distributed program checked against a real run of all its ranks (gloo
    processes): what ran and each output's largest error over the ranks.

    Attributes:
        what: the run, in words (``2 gloo processes``).
        world: the ranks that ran.
        sizes: the sizes the program ran at.
        max_abs_error: per output, the largest absolute error over all ranks.
        rtol, atol: the tolerance every output met.
    """

    what: str
    world: int
    sizes: Mapping[str, int]
    max_abs_error: Mapping[str, float]
    rtol: float
    atol: float


@dataclass(frozen=True, slots=True)
class FrontendResult:
    """A frontend's program and what it knows about it.

    Attributes:
        name: the frontend that produced it.
        program: the IR, not yet verified.
        captured_with: how, in words (for the report).
        ops_total: ops (ATen calls, jaxpr equations) the frontend saw; 0 when it does
            not count them.
        uncovered: the ops the IR does not cover, most bytes first.
        reference: builds the validation plan (runs the real program); ``None`` when
            there is nothing to compare with (then ``no_reference_reason`` says why).
        no_reference_reason: why ``reference`` is ``None``.
        real_run: for a distributed program, runs all its ranks for real and compares
            them with the simulated IR (raises E0556 on a difference); ``None`` if the
            frontend cannot.
        measure: times the real program on the local device; ``None`` if not runnable.
        ir_sizes: size bindings for the IR (IR files: the ``--set`` values).
        source_sizes: the model file's size constants as captured (``--set`` applied),
            the binding the report records; empty for IR files and live modules.
        notes: what the frontend observed, for the report.
        precision_hint: the policy the program itself asks for (TF32 enabled), applied
            by the pipeline when the user left the policy at ``default``.
        keep_live: tensors dead-code elimination keeps (read by uncovered ops).
        uncovered_values: program inputs that hold uncovered ops' outputs (the bounds
            treat them as intermediates).
        generated_values: those of them that hold values a covered op drew at random
            (validation feeds the real run's draws; the bounds charge the op's writes
            only, `solar.ir.fill_generated`).
        xla_cost_analysis: XLA's own cost figures by compilation stage (JAX).
        xla_unavailable: why XLA's cost analysis is missing, when it is.
        counted_flops: the program's FLOPs by an independent counter over the same
            forward (PyTorch: ``torch.utils.flop_counter.FlopCounterMode``'s formulas, Note
            [Independent FLOP count]); ``None`` when the frontend has none.
        padding_flops: of ``counted_flops``, those multiplying zero padding (which
            SOLAR does not count).
        step: for a training step (``--train``), its loss, optimizer and phases.
        module_paths: the dotted module paths the program ran in (``nn.Module`` paths,
            JAX name scopes): the report's per-module view (`solar.report.breakdown`).
        uncounted_ops: the lowered ops the independent counter has no formula for (its
            FLOPs check cannot see their work), most FLOP-heavy kinds first.
        kernel_sources: ``(kernel, "file.py:line")``: the user's source line each kernel
            came from (the report's ``kernels[].source``), where the frontend knows it.
    """

    name: FrontendName
    program: Program
    captured_with: str
    ops_total: int = 0
    uncovered: tuple[UncoveredOp, ...] = ()
    reference: Callable[[], ValidationPlan] | None = None
    no_reference_reason: str | None = None
    real_run: Callable[[], RealRunCheck] | None = None
    measure: Callable[[], Timing] | None = None
    ir_sizes: Mapping[str, int] = field(default_factory=dict)
    source_sizes: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    precision_hint: PrecisionPolicy | None = None
    keep_live: tuple[str, ...] = ()
    uncovered_values: tuple[str, ...] = ()
    generated_values: tuple[str, ...] = ()
    xla_cost_analysis: Mapping[str, Mapping[str, float]] | None = None
    xla_unavailable: str | None = None
    counted_flops: int | None = None
    padding_flops: int = 0
    step: StepInfo | None = None
    module_paths: tuple[str, ...] = ()
    uncounted_ops: tuple[str, ...] = ()
    kernel_sources: tuple[tuple[str, str], ...] = ()


class Frontend(Protocol):
    """A source language's way into the IR (see the module docstring)."""

    @property
    def name(self) -> FrontendName:
        """The name reports and ``--frontend`` use."""
        ...

    def load(
        self,
        path: Path,
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
    ) -> FrontendResult:
        """Turn the source file at ``path`` into IR.

        Raises:
            UsageError: a missing optional dependency (E0908) or option (E0909).
            FrontendError, IRSyntaxError, LLMError: the frontend's own diagnostics.
        """
        ...



class ModuleFrontend(Frontend, Protocol):
    """A frontend that also imports ``--entry package.module:attr`` (``load`` with
    ``path=None``) and captures live modules (the Python API)."""

    def load(
        self,
        path: Path | None,
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
    ) -> FrontendResult:
        """`Frontend.load`; with ``path=None`` the ``options.entry`` it imports."""
        ...

    def load_module(
        self,
        module: object,
        example_inputs: Sequence[object],
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
        kwargs: Mapping[str, object] | None = None,
    ) -> FrontendResult:
        """Capture and lower ``module`` on its example inputs.

        Raises:
            UsageError: a missing optional dependency (E0908).
            FrontendError: capture and reference errors.
        """
        ...


def require_extra(module: str, extra: str) -> None:
    """Fail early, with the install line, when an optional dependency is missing.

    Raises:
        UsageError: E0908.
    """
    if importlib.util.find_spec(module) is None:
        raise UsageError(
            f"this frontend needs {module}: pip install 'solar-sol[{extra}]'", code="E0908"
        )


def require_python_file(path: Path, name: FrontendName) -> None:
    """Fail unless ``path`` is a Python file (what the program frontends read).

    Raises:
        FrontendError: E0509.
    """
    if path.suffix != ".py":
        raise FrontendError(
            f"the {name} frontend reads Python files, got `{path.name}`", code="E0509"
        )


_FLAGS: dict[OptionName, str] = {
    "entry": "--entry",
    "inputs_file": "--inputs",
    "input_shapes": "--input-shape",
    "reference_file": "--reference",
    "sizes": "--set",
    "train": "--train-mode",
    "train_step": "--train",
    "optimizer": "--optimizer",
}


def _given(options: FrontendOptions, name: OptionName) -> bool:
    if name == "train":  # --train implies a training-mode forward; only --train-mode alone
        return options.train and not options.train_step
    if name == "optimizer":
        return options.optimizer != "auto"
    value = getattr(options, name)
    return bool(value) if not isinstance(value, Path) else True


def refuse_unsupported(
    frontend: FrontendName,
    options: FrontendOptions,
    supported: frozenset[OptionName],
    *,
    where: str | None = None,
) -> None:
    """Stop on an option the frontend would otherwise drop without a word.

    No path may analyse something other than what was asked (a forward for a training
    step, the file's inputs for ``--input-shape``): every option a frontend does not
    honour is an error, and so is ``--optimizer`` without ``--train``. ``where`` names a
    path inside the frontend that honours less (a ``torch.distributed`` file).

    Raises:
        UsageError: E0916, naming the option and the frontend.
    """
    if options.optimizer != "auto" and not options.train_step:
        raise UsageError(
            f"--optimizer {options.optimizer} applies to a training step: add --train",
            code="E0916",
        )
    what = where or f"the {frontend} frontend"
    for name, flag in _FLAGS.items():
        if name not in supported and _given(options, name):
            raise UsageError(
                f"{flag} is not available for {what}",
                code="E0916",
                notes=(f"{what} would be analysed without it",),
            )
