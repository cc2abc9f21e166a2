"""The commands' flows over the stages: `analyze` reads top to bottom.

Contract: ``Source + AnalyzeOptions -> Report`` (`analyze`, `analyze_module`,
`analyze_front`) and ``-> PreparedProgram`` (`prepare`, which `solar bounds`,
``compare``, ``provision`` and the sweep's capture worker use: Note [One preparation
path] in `solar.pipeline.prepare`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from solar.diagnostics import UsageError
from solar.files import write_atomic
from solar.frontends import FrontendResult, Progress
from solar.hw import HardwareSpec, load_hardware_spec
from solar.pipeline.assemble import bounds_at, measurement, report_at, report_base
from solar.pipeline.options import (
    AnalyzeOptions,
    EntrySource,
    FileSource,
    ModuleSource,
    Source,
    source_info,
)
from solar.pipeline.prepare import (
    PreparedProgram,
    bounds_program,
    load_program,
    prepare_program,
    quiet,
)
from solar.pipeline.training import training_info
from solar.pipeline.validation import validate_front
from solar.report import InputInfo, Report

__all__ = ["analyze", "analyze_front", "analyze_module", "lift_source", "prepare"]


def prepare(
    source: Source, options: AnalyzeOptions, *, progress: Progress | None = None
) -> PreparedProgram:
    """Frontend -> the prepared program (Note [One preparation path]).

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, usage).
    """
    front = load_program(source, options, progress=progress)
    return prepare_program(front, options, progress)


def lift_source(
    path: Path | None, options: AnalyzeOptions, *, progress: Progress | None = None
) -> PreparedProgram:
    """`prepare` for a file, or for ``options.entry`` (``pkg.module:attr``) when ``path``
    is ``None`` (``solar bounds``, ``compare``, ``provision``, ``sweep``).

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, usage).
    """
    return prepare(_source(path, options), options, progress=progress)


def _source(path: Path | None, options: AnalyzeOptions) -> Source:
    return EntrySource(options.entry or "") if path is None else FileSource(path)


def analyze(
    path: Path | None,
    options: AnalyzeOptions,
    *,
    progress: Progress | None = None,
) -> Report:
    """Run frontend → prepare → validate → bounds → report for one source file.

    ``path`` may be ``None`` with ``options.entry = "pkg.module:attr"``: the entry is
    imported (PyTorch frontend) instead of a file.

    Raises:
        SolarError: any stage's diagnostic (frontend, IR, spec, usage).
    """
    say = progress or quiet
    specs = _specs(options)  # fail fast on a bad --arch
    source = _source(path, options)
    if path is None:
        say(f"importing {options.entry} (torch frontend)")
    else:
        say(f"loading {path} ({options.frontend} frontend)")
    front = load_program(source, options, progress=say)
    return analyze_front(front, source_info(source, options), specs, options, say, path=path)


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
    options = options or AnalyzeOptions()
    say = progress or quiet
    specs = _specs(options)
    source = ModuleSource(module, tuple(example_inputs), kwargs)
    front = load_program(source, options, progress=say)
    return analyze_front(front, source_info(source, options), specs, options, say)


def analyze_front(
    front: FrontendResult,
    source: InputInfo,
    specs: Sequence[HardwareSpec],
    options: AnalyzeOptions,
    say: Progress,
    *,
    path: Path | None = None,
) -> Report:
    """Prepare → validate → measure → bounds → report for a frontend's result."""
    prepared = prepare_program(front, options, say)
    validation = validate_front(prepared, options, say)
    measured = measurement(front, options, specs, say, [k.name for k in prepared.graph.kernels])
    say("computing bounds")
    training = None
    if front.step is not None:
        say("bounding the training step's phases")
        training = training_info(prepared, specs, precision=prepared.precision,
                                 cache=options.cache)
    base = report_base(prepared, source, specs, validation, measurement=measured,
                       training=training)
    if options.save_ir is not None:
        write_atomic(options.save_ir, base.ir_text)
    point = bounds_at(base, prepared.sizes, precision=prepared.precision, cache=options.cache)
    report = report_at(base, point, options)
    if options.distributed is not None:
        say(f"bounding the plan on {options.distributed.cluster}")
        report = _with_distributed(report, prepared, options, path)
    return report


def _with_distributed(
    report: Report, prepared: PreparedProgram, options: AnalyzeOptions, path: Path | None
) -> Report:
    """The report with its ``distributed`` section (docs/distributed.md); each rank's
    program derived by torch's tensor parallelism where it can be (`solar.distributed.
    derived`), else analytically, as its assumptions say."""
    from solar.distributed import bound_prepared
    from solar.distributed.derived import RankDeriver

    front, request = prepared.front, options.distributed
    assert request is not None
    derived = RankDeriver(path, request, frontend=front.name, sizes=options.sizes,
                          train=options.train_step, optimizer=options.optimizer,
                          prepare=lambda f, p: bounds_program(f, p).program)
    info = bound_prepared(
        prepared.program, prepared.graph, prepared.sizes, request,
        phase_of=front.step.phase_of if front.step is not None else None,
        precision=prepared.precision, size_constants=front.source_sizes, derived=derived,
    )  # fmt: skip
    if derived.note is not None:
        info = info.model_copy(update={"assumptions": (derived.note, *info.assumptions)})
    warnings = report.warnings
    if not info.memory.feasible:
        warnings += (f"plan {info.plan.label} does not fit: it needs at least "
                     f"{info.memory.total_bytes / 1e9:.1f} GB per GPU of "
                     f"{info.memory.capacity_bytes / 1e9:.1f} GB; no step bound is given",)
    return report.model_copy(update={"distributed": info, "warnings": warnings})


def _specs(options: AnalyzeOptions) -> list[HardwareSpec]:
    """``options.archs``' specs.

    Raises:
        UsageError: E0907 no arch; HardwareSpecError: a bad one.
    """
    specs = [load_hardware_spec(a) for a in options.archs]
    if not specs:
        raise UsageError("give at least one --arch", code="E0907")
    return specs
