"""The JAX frontend behind the `Frontend` protocol.

Contract: ``JAX program file -> FrontendResult``: the jaxpr captured on abstract
values and lowered to IR (one kernel per equation), its coverage, XLA's own cost
analysis as a cross-check (figures only; the pipeline words them), a lazy reference
(the real program jitted on CPU, or re-captured at reduced sizes when its real run
would exceed ``FrontendOptions.reference_budget_bytes``) and a lazy measurer. The file
is imported once unless the reference needs reduced sizes: the capture holds the
function and its inputs (Note [Model-file runs] in `solar.frontends.protocol`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from solar.diagnostics import SolarError, UsageError
from solar.frontends.protocol import (
    FrontendOptions,
    FrontendResult,
    OptionName,
    Progress,
    ReferenceCheck,
    ValidationPlan,
    refuse_unsupported,
    require_extra,
    require_python_file,
)
from solar.options import FrontendName

if TYPE_CHECKING:
    from solar.ir import Program
    from solar.measure import Timing
    from solar.training import StepInfo

__all__ = ["JaxFrontend"]


class JaxFrontend:
    """JAX program files (a function or a Flax module, plus ``get_inputs()``)."""

    @property
    def name(self) -> FrontendName:
        """``jax``."""
        return "jax"

    def load(
        self,
        path: Path,
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
    ) -> FrontendResult:
        """Capture and lower the program file at ``path`` (sizes: ``options.sizes``).

        Raises:
            UsageError: jax is not installed (E0908); E0916 ``--entry-args`` (they build
                PyTorch modules; a JAX entry is a function of its inputs).
            FrontendError: loading, capture and lowering errors (`solar.frontends.jaxfe`).
        """
        if options.entry_args is not None:
            raise UsageError(
                "--entry-args build a PyTorch class or factory; a JAX entry is a function "
                "of its inputs",
                code="E0916",
            )
        require_python_file(path, "jax")
        refuse_unsupported("jax", options, _JAX_OPTIONS)
        require_extra("jax", "jax")
        from solar.frontends.jaxfe.capture import trace_jax_file
        from solar.frontends.jaxfe.lowering import lower_jaxpr
        from solar.frontends.jaxfe.reference import (
            float64_literals,
            reference_at_reduced_sizes,
            reference_data,
            x64_literals,
        )
        from solar.frontends.jaxfe.xla import xla_cost_analysis
        from solar.frontends.kit.collectives import declared_world_size

        world = declared_world_size(path)
        if world is not None:  # a shard_map program (docs/distributed.md)
            from solar.frontends.jaxfe.distributed import capture_on_host_devices

            progress(f"capturing the per-device program on {world} host devices")
            host = capture_on_host_devices(path, world=world)
            what = ("the shard_map body's jaxpr" if host.via == "shard_map" else
                    "XLA's per-device HLO of the jit, replayed as a jaxpr")
            return FrontendResult(
                name="jax",
                program=host.program,
                captured_with=f"{what}, on {world} host devices",
                kernel_sources=host.kernel_sources,
                ops_total=host.ops_seen,
                uncovered=host.coverage,
                keep_live=host.keep_live,
                uncovered_values=host.uncovered_values,
                no_reference_reason=(
                    "a distributed program: validate it on host devices "
                    "(solar.frontends.jaxfe.distributed.validate_on_host_devices)"
                ),
            )

        progress("capturing jaxpr on abstract values")
        capture = trace_jax_file(path, entry=options.entry, overrides=dict(options.sizes) or None)
        lowered = lower_jaxpr(capture, count_uncovered=True)
        xla: dict[str, dict[str, float]] | None = None
        unavailable = None
        try:
            xla = xla_cost_analysis(capture)
        except SolarError as err:
            unavailable = err.message

        def reference() -> ValidationPlan:
            from solar.frontends.jaxfe.reference import program_bytes
            from solar.frontends.kit import (
                EXECUTOR_TIME_SHARE,
                executor_seconds,
                reference_budget_bytes,
            )

            budget = reference_budget_bytes(options.reference_budget_bytes)
            seconds = options.time_budget_s * EXECUTOR_TIME_SHARE
            if (
                program_bytes(capture) <= budget
                and executor_seconds(lowered.program, budget) <= seconds
            ):
                inputs, outputs = reference_data(capture, lowered=lowered)

                def float64() -> ValidationPlan:
                    ins, outs = reference_data(capture, lowered=lowered, float64=True)
                    program = float64_literals(lowered.program, x64_literals(capture))
                    return ValidationPlan(program, ins, outs, "full")

                wide = None if lowered.uncovered_values else float64
                return ValidationPlan(lowered.program, inputs, outputs, "full", float64=wide)
            red = reference_at_reduced_sizes(
                path,
                budget,
                entry=options.entry,
                start=dict(options.sizes),
                capture=capture,
                budget_seconds=seconds,
            )
            return ValidationPlan(
                red.lowered.program,
                red.inputs,
                red.outputs,
                "reduced-sizes",
                red.description,
                sizes=dict(red.sizes or {}),
            )

        def measure() -> Timing:
            from solar.measure import measure_jax

            args = (*capture.init_params(), *capture.input_values)
            return measure_jax(capture.flat_fn, args)

        tf32 = _default_matmul_is_tf32()
        notes = tuple(lowered.notes)
        if tf32:
            notes = (
                *notes,
                "JAX runs fp32 matmuls at DEFAULT precision (TF32 on GPUs, one "
                "bf16 pass on TPUs): precision policy tf32",
            )
        step = _training_step(lowered.program) if options.train_step else None
        if options.train_step and step is None:
            raise UsageError(
                "--train: the JAX program takes no gradient (no jax.grad, value_and_grad or "
                "vjp in its function), so it is no training step; SOLAR does not derive "
                "one for JAX",
                code="E0916",
                notes=("make the file's function the step itself (loss, jax.grad, update), "
                       "or drop --train to bound the forward",),
            )
        if options.train_step and options.optimizer != "auto":
            notes = (
                *notes,
                f"--optimizer {options.optimizer}: a JAX step's update is the "
                "file's own (its function's optax or hand-written update)",
            )
        program, sym_notes = _symbolic(lowered.program, capture.sizes, path, options, progress)
        return FrontendResult(
            name="jax",
            program=program,
            source_sizes=dict(capture.sizes),
            captured_with="jaxpr on abstract values",
            ops_total=lowered.ops_seen,
            uncovered=tuple(lowered.coverage),
            reference=reference,
            measure=measure,
            notes=(*notes, *sym_notes),
            precision_hint="tf32" if tf32 else None,
            keep_live=lowered.keep_alive,
            uncovered_values=tuple(v.name for v in lowered.uncovered_values),
            xla_cost_analysis=xla,
            xla_unavailable=unavailable,
            step=step,
            module_paths=lowered.module_paths,
            kernel_sources=lowered.kernel_sources,
        )


def _symbolic(
    program: Program,
    sizes: Mapping[str, int],
    path: Path,
    options: FrontendOptions,
    progress: Progress,
) -> tuple[Program, tuple[str, ...]]:
    """``program`` symbolic in the file's sizes where that holds, and what to note."""
    from solar.frontends.jaxfe.capture import trace_jax_file
    from solar.frontends.jaxfe.lowering import lower_jaxpr
    from solar.frontends.kit import reference_budget_bytes, symbolic_notes, symbolize_sizes

    if not options.symbolic_sizes or not sizes:
        return program, ()
    progress("re-capturing at other sizes for symbolic formulas")

    def capture_at(binding: Mapping[str, int]) -> tuple[Program, Mapping[str, int]]:
        other = trace_jax_file(path, entry=options.entry, overrides=binding)
        return lower_jaxpr(other).program, other.sizes

    # the re-captures run get_inputs() for real (numpy arrays): the check capture may
    # build what a reference run may (Note [Symbolic sizes by re-binding])
    budget = reference_budget_bytes(options.reference_budget_bytes)
    sym = symbolize_sizes(
        program, sizes, capture_at, fixed=options.sizes, verify_input_bytes=budget
    )
    return sym.program, symbolic_notes(sym)


_JAX_OPTIONS: frozenset[OptionName] = frozenset({"entry", "sizes", "train_step", "optimizer"})
"""What the JAX frontend honours (`refuse_unsupported`): the step is the file's own, so
``--train`` asks to bound it by phase; inputs come from the file; no training mode."""


def _training_step(program: Program) -> StepInfo | None:
    """The step's phases (Note [JAX step phases]), or ``None`` without a gradient."""
    from solar.training import StepInfo, phase_of_kernel

    phases = {phase_of_kernel(k.name) for k in program.kernels}
    if "backward" not in phases:
        return None
    update = "the file's own update" if "optimizer" in phases else "none in the function"
    return StepInfo(
        "the file's own (its function's jax.grad / value_and_grad)", update, phase_of_kernel
    )


# jax_default_matmul_precision values that ask for fp32-accurate matmuls
_FP32_ACCURATE_PRECISIONS = frozenset({"highest", "float32", "f32_f32_f32"})


def _default_matmul_is_tf32() -> bool:
    """Whether fp32 matmuls run at XLA's DEFAULT precision (TF32 on sm80+ GPUs).

    JAX's ``jax_default_matmul_precision`` is unset unless the program asks for more;
    at DEFAULT, XLA runs fp32 dots on TF32 tensor cores (one bf16 pass on a TPU), so
    the fp32-accurate policy would bound such a program above its real time. A dot
    that asks for ``Precision.HIGHEST`` itself is then charged at TF32 too: lower,
    still a lower bound.
    """
    import jax

    value = getattr(jax.config, "jax_default_matmul_precision", None)
    return value is None or str(value).lower() not in _FP32_ACCURATE_PRECISIONS
