"""The PyTorch frontend behind the `Frontend` protocol.

Contract: ``model file | nn.Module + example inputs -> FrontendResult``: the program
captured at ATen level over fake tensors and lowered to IR, its coverage, a lazy
reference (the real program run once on CPU, or re-captured at reduced sizes when its
real run would exceed ``FrontendOptions.reference_budget_bytes``) and a lazy measurer.
The frontend reports what it observed (real values were needed, the program enables
TF32); the pipeline decides what follows from it. How often the model file runs:
Note [Model-file runs] in `solar.frontends.protocol`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solar.frontends.protocol import (
    FrontendOptions,
    FrontendResult,
    OptionName,
    Progress,
    RealRunCheck,
    ReferenceCheck,
    ValidationPlan,
    refuse_unsupported,
    require_extra,
    require_python_file,
)
from solar.options import FrontendName

if TYPE_CHECKING:

    from solar.frontends.kit import LoweredProgram
    from solar.frontends.pytorch.capture import TorchCapture
    from solar.frontends.pytorch.loader import Instance, ProgramSource
    from solar.frontends.pytorch.registry import OpFallback
    from solar.frontends.pytorch.train_step import TrainStep
    from solar.ir import Program
    from solar.measure import Timing

__all__ = ["TorchFrontend"]


class TorchFrontend:
    """PyTorch model files (KernelBench convention) and live modules."""

    @property
    def name(self) -> FrontendName:
        """``torch``."""
        return "torch"

    def load(
        self,
        path: Path | None,
        options: FrontendOptions,
        *,
        progress: Progress,
        check: ReferenceCheck | None = None,
    ) -> FrontendResult:
        """Capture and lower the model file at ``path`` (sizes: ``options.sizes``), or
        with ``path=None`` the ``options.entry = "pkg.module:attr"`` it imports.

        Raises:
            UsageError: torch is not installed (E0908).
            FrontendError: E0501-E0511 (loading, capture, reference).
        """
        if path is not None:
            require_python_file(path, "torch")
        refuse_unsupported("torch", options, _TORCH_OPTIONS)
        require_extra("torch", "torch")
        from solar.frontends.kit.collectives import declared_world_size
        from solar.frontends.pytorch.driver import lower_capture
        from solar.frontends.pytorch.plans import reduced_plan
        from solar.frontends.pytorch.reference import reference_at_reduced_sizes
        from solar.frontends.pytorch.trace import trace_model_file

        world = declared_world_size(path) if path is not None else None
        if world is not None:
            assert path is not None
            refuse_unsupported("torch", options, _DISTRIBUTED_OPTIONS,
                               where="a torch.distributed file")
            return _distributed(path, world, progress, _train_step(options))

        progress("capturing ATen ops over fake tensors")
        capture = trace_model_file(
            path,
            entry=options.entry,
            entry_args=options.entry_args,
            inputs=options.inputs_file,
            overrides=dict(options.sizes) or None,
            train=options.train,
            input_shapes=options.input_shapes,
            step=_train_step(options),
        )
        fallback = _op_fallback(options, check)
        progress(f"lowering {capture.info.num_calls} ATen calls")
        lowered = lower_capture(capture, op_fallback=fallback)

        def reduced(src: Path, budget: int, seconds: float, float64: bool) -> ValidationPlan:
            red = reference_at_reduced_sizes(
                src,
                budget,
                budget_seconds=seconds,
                entry=options.entry,
                entry_args=options.entry_args,
                inputs=options.inputs_file,
                input_shapes=options.input_shapes,
                op_fallback=fallback,
                train=options.train,
                step=_train_step(options),
                start=dict(options.sizes),
                capture=capture,
                float64=float64,
            )
            return reduced_plan(red, "reduced-sizes", dict(red.sizes or {}), budget)

        if path is None:  # an imported module: no size constants to rebind
            return _result(capture, lowered, options, None, fallback)
        src = path
        result = _result(
            capture, lowered, options, lambda b, t, w: reduced(src, b, t, w), fallback
        )
        return _symbolic(result, capture, lowered, path, options, progress, fallback)

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
        """Capture and lower a live module (or callable) on its example inputs.

        Raises:
            UsageError: torch is not installed (E0908).
            FrontendError: capture and reference errors.
        """
        refuse_unsupported("torch", options, _TORCH_OPTIONS)
        require_extra("torch", "torch")
        from solar.frontends.pytorch.driver import lower_capture
        from solar.frontends.pytorch.trace import trace_module

        progress("capturing ATen ops over fake tensors")
        capture = trace_module(
            module,
            tuple(example_inputs),
            kwargs=kwargs,
            train=options.train,
            step=_train_step(options),
        )
        fallback = _op_fallback(options, check)
        lowered = lower_capture(capture, op_fallback=fallback)
        return _result(capture, lowered, options, None, fallback)


_TORCH_OPTIONS: frozenset[OptionName] = frozenset(
    {"entry", "inputs_file", "input_shapes", "sizes", "train", "train_step", "optimizer"}
)
"""What the PyTorch frontend honours (`refuse_unsupported`): all but ``--reference``."""


_DISTRIBUTED_OPTIONS: frozenset[OptionName] = frozenset({"train_step", "optimizer"})
"""What a ``torch.distributed`` file honours: a training step (``--train``)."""


def _distributed(
    path: Path, world: int, progress: Progress, step: TrainStep | None
) -> FrontendResult:
    """A ``torch.distributed`` file (``WORLD_SIZE = n``): each rank captured under the
    fake process group, merged into one SPMD program (docs/distributed.md)."""
    from solar.frontends.pytorch.distributed import capture_distributed

    progress(f"capturing {world} ranks under the fake process group")
    dist = capture_distributed(path, world=world, step=step)
    first = dist.ranks[0]
    return FrontendResult(
        name="torch",
        program=dist.program,
        captured_with=f"ATen calls of each of {world} ranks under the fake process group",
        ops_total=first.ops_seen,
        uncovered=first.coverage,
        no_reference_reason=(
            "a distributed program trained with a chosen optimizer: validate it against a "
            "real gloo run (solar.frontends.pytorch.distributed.validate_with_gloo)"
        ),
        # the real run trains with the file's optimizer (TrainStep()), as --train does
        real_run=(lambda: _gloo_check(path, world, step is not None))
        if step is None or step.optimizer is None else None,
        keep_live=first.keep_alive,
        uncovered_values=tuple(v.name for v in first.uncovered_values),
    )


def _gloo_check(path: Path, world: int, train: bool) -> RealRunCheck:
    """The file on ``world`` gloo processes against the simulated IR (docs/distributed.md,
    "Validation against a real run")."""
    from solar.frontends.pytorch.distributed import validate_with_gloo

    rtol, atol = 1e-4, 1e-5
    check = validate_with_gloo(path, world=world, rtol=rtol, atol=atol, train=train)
    return RealRunCheck(f"{world} gloo processes", check.world, check.sizes,
                        check.max_abs_error, rtol, atol)


def _train_step(options: FrontendOptions) -> TrainStep | None:
    """The training step the options ask for (``--train``), else ``None``."""
    if not options.train_step:
        return None
    from solar.frontends.pytorch.train_step import OptimizerSpec, TrainStep

    if options.optimizer == "auto":
        return TrainStep()
    # PyTorch's defaults for each optimizer (AdamW: weight decay 1e-2)
    wd = 1e-2 if options.optimizer == "adamw" else 0.0
    return TrainStep(OptimizerSpec(options.optimizer, weight_decay=wd))


def _symbolic(
    result: FrontendResult,
    capture: TorchCapture,
    lowered: LoweredProgram,
    path: Path,
    options: FrontendOptions,
    progress: Progress,
    fallback: OpFallback | None = None,
) -> FrontendResult:
    """``result`` with its program symbolic in the file's sizes, where that holds."""
    from solar.frontends.kit import symbolic_notes, symbolize_sizes
    from solar.frontends.pytorch.driver import lower_capture
    from solar.frontends.pytorch.trace import trace_model_file

    sizes = dict(capture.info.sizes)
    result = replace(result, source_sizes=sizes)
    if not options.symbolic_sizes or not sizes:
        return result
    if capture.info.used_real_values or options.inputs_file is not None or options.input_shapes:
        why = (
            "the capture needed real tensors"
            if capture.info.used_real_values
            else "the inputs are given, not made from the sizes"
        )
        return replace(
            result, notes=(*result.notes, f"formulas are constants at the captured sizes: {why}")
        )
    progress("re-capturing at other sizes for symbolic formulas")

    def capture_at(binding: Mapping[str, int]) -> tuple[Program, Mapping[str, int]]:
        other = trace_model_file(
            path,
            entry=options.entry,
            entry_args=options.entry_args,
            overrides=dict(binding),
            train=options.train,
            step=_train_step(options),
            on_meta=capture.info.on_meta,
        )
        return lower_capture(other, op_fallback=fallback).program, other.info.sizes

    sym = symbolize_sizes(lowered.program, sizes, capture_at, fixed=options.sizes)
    return replace(result, program=sym.program, notes=(*result.notes, *symbolic_notes(sym)))


def _op_fallback(options: FrontendOptions, check: ReferenceCheck | None) -> OpFallback | None:
    """The per-op LLM fallback when one is asked for (and its answers can be checked)."""
    if not options.op_fallback or options.llm is None or check is None:
        return None
    from solar.frontends.llm.op_fallback import make_op_fallback

    return make_op_fallback(options.llm, check)


def _tf32_enabled() -> bool:
    """True when the user's code enabled TF32 for fp32 matmuls (it then runs on tensor cores)."""
    import torch

    return bool(torch.backends.cuda.matmul.allow_tf32) or (
        torch.get_float32_matmul_precision() != "highest"
    )


class _RealBuild:
    """One real build of the program at the capture's sizes (Note [Model-file runs]).

    The full-size reference takes it first (it must see pristine parameters), then
    the measurer reuses it; a measurer that comes first builds its own and the
    reference then builds another.
    """

    def __init__(self, source: ProgramSource) -> None:
        self._source = source
        self._built: Instance | None = None
        self._prebuilt: ProgramSource | None = None
        self._as_built: tuple[tuple[str, int, int], ...] = ()
        self._measured = False

    def for_reference(self, capture: TorchCapture) -> TorchCapture:
        """``capture``, rebuilt from a fresh real build the measurer may reuse later.

        The build runs the user's code up to the program's inputs, exactly as the
        reference's own rebuild would, and nothing runs between it and the reference
        run (which rebuilds nothing: it runs the built program on copies of its inputs).
        """
        from solar.frontends.pytorch.loader import ProgramSource, instantiate

        if self._measured:
            return capture
        src = self._source
        inst = instantiate(replace(src, step=None, train=src.train or src.step is not None))
        self._built, self._as_built = inst, _fingerprint(inst)
        prebuilt = self._prebuilt = ProgramSource(
            name=self._source.name,
            target=inst.fn,
            example_inputs=inst.args,
            example_kwargs=tuple(inst.kwargs.items()),
            train=self._source.train,
            step=self._source.step,
            namespace=inst.namespace,  # a training step reads the file's hooks
        )
        return replace(capture, source=prebuilt)

    def for_float64(self, capture: TorchCapture) -> TorchCapture:
        """``capture`` to run in float64: a float64 copy of the reference's build when
        the reference left it as built (no parameter, buffer, tensor attribute or input
        replaced or written in place: their version counters say so; no training step),
        else a fresh float64 build (Note [Model-file runs])."""
        inst, prebuilt = self._built, self._prebuilt
        if (
            inst is None
            or prebuilt is None
            or self._source.step is not None
            or _fingerprint(inst) != self._as_built
        ):
            return replace(capture, source=replace(capture.source, float64=True))
        return replace(capture, source=replace(prebuilt, float64=True))

    def for_measure(self) -> Instance:
        """The reference's build if there is one, else a fresh one."""
        from solar.frontends.pytorch.loader import instantiate
        from solar.frontends.pytorch.train_step import training_instance

        self._measured = True
        inst, self._built = self._built, None
        if inst is None:
            return instantiate(self._source)
        step = self._source.step
        return inst if step is None else training_instance(inst, step)


def _fingerprint(inst: Instance) -> tuple[tuple[str, int, int], ...]:
    """Every tensor of a built program (parameters, buffers, tensor attributes, inputs)
    by where it is, with its identity and version counter: equal twice when nothing was
    replaced or written in place in between."""
    import torch
    from torch.utils._pytree import tree_flatten

    found: list[tuple[str, Any]] = list(inst.state.items())
    module = inst.module
    if isinstance(module, torch.nn.Module):
        found += list(module.named_parameters()) + list(module.named_buffers())
        for path, mod in module.named_modules():
            found += [(f"{path}.{k}", v) for k, v in vars(mod).items()
                      if isinstance(v, torch.Tensor)]
    leaves, _ = tree_flatten(inst.input_tree())
    found += [(f"input {k}", x) for k, x in enumerate(leaves)]
    return tuple(
        (name, id(t), t._version) for name, t in found if isinstance(t, torch.Tensor)
    )


def _result(
    capture: TorchCapture,
    lowered: LoweredProgram,
    options: FrontendOptions,
    reduced: Callable[[int, float, bool], ValidationPlan] | None,
    fallback: OpFallback | None,
) -> FrontendResult:
    from solar.frontends.pytorch.flops import uncounted_ops
    info = capture.info
    real = _RealBuild(capture.source)

    def reference() -> ValidationPlan:
        """Note [Reference strategies] (`solar.frontends.pytorch.plans`)."""
        from solar.frontends.pytorch.plans import ReferencePlanner

        return ReferencePlanner(capture, lowered, options, reduced, fallback, real).plan()

    def measure() -> Timing:
        from solar.measure import measure_torch

        inst = real.for_measure()
        return measure_torch(inst.fn, inst.args, inst.kwargs)

    notes = []
    if info.used_real_values:
        notes.append(
            f"captured with real tensors: {info.real_reason} (the program reads tensor "
            "values on the host, so its control flow or shapes may depend on them; the IR "
            "is the path taken for these inputs)"
        )
    step = None
    if info.train_step is not None:
        from solar.frontends.pytorch.train_step import phase_of_kernel
        from solar.training import StepInfo

        step = StepInfo(info.train_step[0], info.train_step[1], phase_of_kernel)
    tf32 = _tf32_enabled()
    if tf32:
        notes.append("the program enables TF32 for fp32 matmuls: precision policy tf32")
    return FrontendResult(
        name="torch",
        program=lowered.program,
        captured_with="real tensors" if info.used_real_values else "fake-tensor dispatch",
        ops_total=info.num_calls,
        uncovered=tuple(lowered.coverage),
        reference=reference,
        measure=measure,
        notes=tuple(notes),
        precision_hint="tf32" if tf32 else None,
        keep_live=lowered.keep_alive,
        uncovered_values=tuple(v.name for v in lowered.uncovered_values),
        counted_flops=info.counted_flops,
        padding_flops=info.padding_flops,
        generated_values=lowered.generated,
        step=step,
        module_paths=tuple(sorted({c.module_path for c in capture.calls if c.module_path})),
        uncounted_ops=uncounted_ops(capture.calls),
        kernel_sources=lowered.kernel_sources,
    )
