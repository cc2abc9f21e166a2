"""Frontend adapters: one call per frontend, one result shape for the pipeline.

Contract: ``(path, options) -> FrontendOutput``: an unverified `Program`, its
coverage, a *lazy* reference provider (the real program's inputs and outputs, by IR
tensor name, possibly at reduced sizes) and a lazy measurer. Frameworks are
imported inside the adapters, so a missing optional extra only matters for the
frontend that needs it. ``auto`` picks ``ir`` for ``.alir`` files, ``jax`` for files
that import jax/flax and not torch, otherwise ``torch``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from solar.diagnostics import FrontendError, SolarError, UsageError
from solar.ir import Program, parse_program
from solar.measure import Timing
from solar.report.schema import CoverageInfo, UncoveredOpInfo

if TYPE_CHECKING:
    from solar.pipeline import AnalyzeOptions

__all__ = [
    "FrontendOutput",
    "ValidationPlan",
    "detect_frontend",
    "load_program",
    "module_frontend",
]

Arrays = dict[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class ValidationPlan:
    """What to execute and compare: possibly a re-lowered program at reduced sizes."""

    program: Program
    inputs: Arrays
    outputs: Arrays
    strategy: str = "full"
    description: str = ""
    sizes: Mapping[str, int] = field(default_factory=dict)
    reference_at: Callable[[Mapping[str, int]], tuple[Arrays, Arrays]] | None = None


@dataclass(frozen=True, slots=True)
class FrontendOutput:
    """A frontend's result, in the shape the pipeline consumes."""

    name: str
    program: Program
    captured_with: str
    coverage: CoverageInfo
    reference: Callable[[], ValidationPlan] | None = None
    no_reference_reason: str | None = None
    measure: Callable[[], Timing] | None = None
    ir_sizes: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    precision_hint: str | None = None
    keep_live: tuple[str, ...] = ()
    uncovered_values: tuple[str, ...] = ()
    """Tensors dead-code elimination keeps (read by uncovered ops outside the IR)."""


FULL_COVERAGE = CoverageInfo(complete=True, covered_bytes_fraction=1.0, ops_total=0)


def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise UsageError(
            f"this frontend needs {module}: pip install 'solar-sol[{extra}]'", code="E0908"
        )


def detect_frontend(path: Path) -> str:
    """The frontend ``auto`` picks for ``path``."""
    if path.suffix == ".alir":
        return "ir"
    if importlib.util.find_spec("jax") is not None:
        from solar.frontends.jaxfe import is_jax_file

        if is_jax_file(path):
            return "jax"
    return "torch"


def _coverage(uncovered: Any, ops_total: int) -> CoverageInfo:
    rows = tuple(
        UncoveredOpInfo(op=u.target, count=u.count, bytes_share=float(u.bytes_share))
        for u in uncovered
    )
    share = sum(r.bytes_share for r in rows)
    return CoverageInfo(
        complete=not rows,
        covered_bytes_fraction=max(0.0, 1.0 - share),
        ops_total=ops_total,
        uncovered=rows,
    )


def _load_npz(path: Path) -> Arrays:
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.asarray(data[k]) for k in data.files}
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", code="E0901") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read {path} as .npz: {err}", code="E0902") from None


# ---------------------------------------------------------------------------- IR files
def _ir_frontend(path: Path, options: AnalyzeOptions) -> FrontendOutput:
    text = path.read_text(encoding="utf-8")
    program = parse_program(text, filename=str(path))
    reference = None
    reason: str | None = (
        "hand-written IR has no source program; pass --reference ref.npz to validate"
    )
    if options.reference_file is not None:
        data = _load_npz(options.reference_file)
        outs = {t.name for t in program.tensors if t.role == "output"}

        def reference() -> ValidationPlan:
            return ValidationPlan(
                program,
                {k: v for k, v in data.items() if k not in outs},
                {k: v for k, v in data.items() if k in outs},
                sizes=dict(options.sizes),
            )

        reason = None
    return FrontendOutput(
        name="ir",
        program=program,
        captured_with="hand-written IR",
        coverage=FULL_COVERAGE,
        reference=reference,
        no_reference_reason=reason,
        ir_sizes=dict(options.sizes),
    )


# ---------------------------------------------------------------------------- torch
def _torch_frontend(
    path: Path, options: AnalyzeOptions, progress: Callable[[str], None]
) -> FrontendOutput:
    _require("torch", "torch")
    from solar.frontends import pytorch as tfe

    overrides = dict(options.sizes) or None
    progress("capturing ATen ops over fake tensors")
    capture = tfe.trace_model_file(
        path,
        entry=options.entry,
        inputs=options.inputs_file,
        overrides=overrides,
        train=options.train,
    )
    fallback = _op_fallback(options)
    progress(f"lowering {capture.info.num_calls} ATen calls")
    lowered = tfe.lower_capture(capture, op_fallback=fallback)

    def reduced() -> ValidationPlan:
        red = tfe.reference_at_reduced_sizes(
            path,
            options.reference_budget_bytes,
            entry=options.entry,
            inputs=options.inputs_file,
            op_fallback=fallback,
            train=options.train,
            start=dict(options.sizes),
        )
        return ValidationPlan(
            red.lowered.program, red.inputs, red.outputs, "reduced-sizes", red.description
        )

    return _torch_output(capture, lowered, options, reduced)


def module_frontend(
    module: Any, example_inputs: Any, options: AnalyzeOptions, progress: Callable[[str], None]
) -> FrontendOutput:
    """The torch frontend for a live module (the `solar.analyze` Python API)."""
    _require("torch", "torch")
    from solar.frontends import pytorch as tfe

    progress("capturing ATen ops over fake tensors")
    capture = tfe.trace_module(module, tuple(example_inputs), train=options.train)
    lowered = tfe.lower_capture(capture, op_fallback=_op_fallback(options))
    return _torch_output(capture, lowered, options, None)


def _tf32_enabled() -> bool:
    """True when the user's code enabled TF32 for fp32 matmuls (it then runs on tensor cores)."""
    import torch

    return bool(torch.backends.cuda.matmul.allow_tf32) or (
        torch.get_float32_matmul_precision() != "highest"
    )


def _torch_output(
    capture: Any,
    lowered: Any,
    options: AnalyzeOptions,
    reduced: Callable[[], ValidationPlan] | None,
) -> FrontendOutput:
    from solar.frontends import pytorch as tfe
    from solar.frontends.pytorch.reference import program_bytes

    info = capture.info

    def reference() -> ValidationPlan:
        if reduced is None or program_bytes(capture) <= options.reference_budget_bytes:
            inputs, outputs = tfe.reference_data(lowered, capture)
            return ValidationPlan(lowered.program, inputs, outputs, "full", sizes=dict(info.sizes))
        return reduced()

    def measure() -> Timing:
        from solar.frontends.pytorch.loader import instantiate
        from solar.measure import measure_torch

        inst = instantiate(capture.source)
        return measure_torch(inst.fn, inst.args)

    notes = []
    if info.used_real_values:
        notes.append(f"captured with real tensors: {info.real_reason}")
    hint = None
    if _tf32_enabled():
        hint = "tf32"
        notes.append("the program enables TF32 for fp32 matmuls: precision policy tf32")
    program = lowered.program
    if options.ir_file is not None:
        program = parse_program(
            options.ir_file.read_text(encoding="utf-8"), filename=str(options.ir_file)
        )
        notes.append(f"bounds computed from hand-written IR {options.ir_file}")
        base_reference = reference

        def reference() -> ValidationPlan:
            plan = base_reference()
            return ValidationPlan(
                program, plan.inputs, plan.outputs, plan.strategy, plan.description, plan.sizes
            )

    return FrontendOutput(
        name="torch",
        program=program,
        captured_with="real tensors" if info.used_real_values else "fake-tensor dispatch",
        coverage=_coverage(lowered.coverage, info.num_calls),
        reference=reference,
        measure=measure,
        notes=tuple(notes),
        precision_hint=hint,
        uncovered_values=tuple(v.name for v in lowered.binding.uncovered_values),
    )


def _op_fallback(options: AnalyzeOptions) -> Any:
    """The per-op LLM fallback when an LLM is configured, else ``None``."""
    if options.llm is None or options.frontend not in ("auto", "torch"):
        return None
    from solar.frontends.llm.op_fallback import make_op_fallback

    return make_op_fallback(options.llm)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- jax
def _jax_frontend(
    path: Path, options: AnalyzeOptions, progress: Callable[[str], None]
) -> FrontendOutput:
    _require("jax", "jax")
    from solar.frontends import jaxfe

    progress("capturing jaxpr on abstract values")
    capture = jaxfe.trace_jax_file(path, entry=options.entry, overrides=dict(options.sizes) or None)
    lowered = jaxfe.lower_jaxpr(capture)
    notes = list(lowered.notes)
    try:
        xla = jaxfe.xla_cost_analysis(capture)
    except SolarError as err:
        notes.append(f"XLA cost analysis unavailable: {err.message}")
    else:
        for stage, figures in sorted(xla.items()):
            parts = ", ".join(f"{k} {v:.4g}" for k, v in sorted(figures.items()))
            notes.append(f"XLA cost_analysis ({stage}): {parts}")

    def reference() -> ValidationPlan:
        inputs, outputs = jaxfe.reference_data(capture, lowered=lowered, entry=options.entry)
        return ValidationPlan(lowered.program, inputs, outputs, "full")

    def measure() -> Timing:
        from solar.measure import measure_jax

        args = (*capture.init_params(), *capture.input_values)
        return measure_jax(capture.flat_fn, args)

    return FrontendOutput(
        name="jax",
        program=lowered.program,
        captured_with="jaxpr on abstract values",
        coverage=_coverage(lowered.coverage, lowered.equations),
        reference=reference,
        measure=measure,
        notes=tuple(notes),
        keep_live=lowered.uncovered_reads,
        uncovered_values=tuple(e.name for e in lowered.extra_inputs if e.kind == "uncovered"),
    )


# ---------------------------------------------------------------------------- llm
def _llm_frontend(
    path: Path, options: AnalyzeOptions, progress: Callable[[str], None]
) -> FrontendOutput:
    _require("torch", "torch")
    if options.llm is None:
        raise UsageError("--frontend llm needs --model (or SOLAR_LLM_MODEL)", code="E0909")
    from solar.frontends.llm import program_task_from_torch, translate_program
    from solar.frontends.llm.reference import torch_reference
    from solar.validate import validate

    ref = torch_reference(path, entry=options.entry)
    task = program_task_from_torch(ref.model, ref.args, outputs=ref.output_tensors)

    def check(program: Program) -> None:
        result = validate(program, ref.inputs, ref.outputs, time_budget_s=options.time_budget_s)
        if result.status != "passed":
            from solar.diagnostics import ValidationMismatchError

            raise ValidationMismatchError(
                result.mismatch or result.reason or f"validation {result.status}", code="E0311"
            )

    progress("translating the program with the LLM frontend")
    result = translate_program(
        path.read_text(encoding="utf-8"),
        config=options.llm,  # type: ignore[arg-type]
        task=task,
        check=check,
    )
    notes = [
        f"llm model {result.model}: {len(result.attempts)} attempt(s), "
        f"{result.prompt_tokens} prompt + {result.completion_tokens} completion tokens"
        + (" (replayed from cache)" if result.from_cache else "")
    ]
    for a in result.attempts:
        first = (a.diagnostic or "").strip().splitlines()[:1]
        notes.append(
            f"attempt {a.number}: {a.outcome}, {a.prompt_tokens or 0}+{a.completion_tokens or 0} "
            f"tokens, {a.latency_s or 0.0:.2f} s" + (f" — {first[0]}" if first else "")
        )

    def reference() -> ValidationPlan:
        return ValidationPlan(result.program, ref.inputs, ref.outputs, "full")

    def measure() -> Timing:
        from solar.measure import measure_torch

        return measure_torch(ref.model, ref.args)

    return FrontendOutput(
        name="llm",
        program=result.program,
        captured_with="llm (cache hit)" if result.from_cache else "llm",
        coverage=FULL_COVERAGE,
        reference=reference,
        measure=measure,
        notes=tuple(notes),
    )


def load_program(
    path: Path, options: AnalyzeOptions, *, progress: Callable[[str], None] | None = None
) -> FrontendOutput:
    """Run the frontend ``options.frontend`` (or the one ``auto`` picks) on ``path``.

    Raises:
        UsageError: missing file or optional dependency.
        FrontendError, IRSyntaxError, LLMError: the frontend's own diagnostics.
    """
    say = progress or (lambda _m: None)
    if not path.is_file():
        raise UsageError(f"no such file: {path}", code="E0901")
    name = options.frontend if options.frontend != "auto" else detect_frontend(path)
    if name == "ir":
        return _ir_frontend(path, options)
    if path.suffix != ".py":
        raise FrontendError(
            f"the {name} frontend reads Python files, got `{path.name}`", code="E0509"
        )
    if name == "jax":
        return _jax_frontend(path, options, say)
    if name == "llm":
        return _llm_frontend(path, options, say)
    return _torch_frontend(path, options, say)
