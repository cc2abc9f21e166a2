"""Reference values for validating a lowered program against eager PyTorch.

Contract: ``(LoweredProgram, TorchCapture) -> (inputs, outputs)`` as
``dict[IR tensor name, np.ndarray]``: the real program (seeded, on CPU) runs once on its
real inputs; inputs hold every input, parameter and constant the IR reads plus, for a
partially covered program, the real outputs of the uncovered calls (the IR's extra
``u<call>_<op>`` inputs); outputs hold the returned tensors. Values of 16/8-bit float
types are widened to f32 (as the executor stores them).

For programs too large to run for real, `reference_at_reduced_sizes` re-captures the
model file with its module-level size constants scaled down (the shared search,
`solar.frontends.kit.reduced_reference`) until `program_bytes` fits a byte budget, and
returns the program at those sizes with its reference data.

A program without size constants is cut along its inputs' batch dimension instead
(`reference_at_reduced_batch`, `solar.frontends.kit.reduced_batch_reference`).

Error codes: E0508 a constant's value was not captured; E0511 no reduced size fits;
E0514 no reduced batch fits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.inputs import InputShape
from solar.frontends.kit import (
    IR_DTYPES,
    BatchRecapture,
    LoweredProgram,
    Recapture,
    ReducedReference,
    executor_seconds,
    reduced_batch_reference,
    reduced_reference,
)
from solar.frontends.pytorch.capture import TorchCapture, capture_program
from solar.frontends.pytorch.driver import lower_capture
from solar.frontends.pytorch.loader import source_for_file
from solar.frontends.pytorch.registry import OpFallback
from solar.frontends.pytorch.replay import replay_values
from solar.frontends.pytorch.train_step import TrainStep
from solar.ir import widen_to_f64
from solar.ir.traversal import eval_int

__all__ = [
    "ReducedReference",
    "program_bytes",
    "reference_at_reduced_batch",
    "reference_at_reduced_sizes",
    "reference_data",
    "reference_values",
]

Arrays = dict[str, np.ndarray]


def reference_data(lowered: LoweredProgram, capture: TorchCapture) -> tuple[Arrays, Arrays]:
    """Run the real program and return (inputs, outputs) keyed by IR tensor name.

    Raises:
        FrontendError: E0501 user code raised; E0506 the real run diverged from the
            capture where intermediate values were needed; E0508 a constant's value is
            unavailable.
    """
    inputs, outputs, _ = reference_values(lowered, capture)
    return inputs, outputs


def reference_values(
    lowered: LoweredProgram, capture: TorchCapture
) -> tuple[Arrays, Arrays, str | None]:
    """`reference_data` plus where the real run left the captured calls (Note [Diverging
    replay] in replay.py), or ``None``."""
    keep = frozenset(v.site[0] for v in lowered.uncovered_values)
    vals = replay_values(capture, keep=keep)
    inputs: Arrays = {}
    for name, arr in zip(lowered.inputs, vals.inputs, strict=False):
        if name is not None and arr is not None:
            inputs[name] = arr
    for key, name in lowered.params:
        inputs[name] = vals.params[key]
    for key, name in lowered.constants:
        if key not in vals.constants:
            raise FrontendError(
                f"the value of constant tensor `{key}` was not captured", code="E0508"
            )
        inputs[name] = vals.constants[key]
    for uv in lowered.uncovered_values:
        value = vals.kept[uv.site[0]][uv.output]
        if value is not None:
            inputs[uv.name] = value
    outputs: Arrays = {}
    for name, arr in zip(lowered.outputs, vals.outputs, strict=False):
        if name is not None and arr is not None:
            outputs[name] = _as_declared(lowered, name, arr)
    return inputs, outputs, vals.diverged


def _as_declared(lowered: LoweredProgram, name: str, arr: np.ndarray) -> np.ndarray:
    """Reshape an output to its IR declaration (outputs that are reshapes of a temp)."""
    decl = lowered.program.tensor(name)
    shape = tuple(eval_int(d, {}) for d in decl.shape)
    return arr.reshape(shape) if arr.shape != shape and arr.size == int(np.prod(shape)) else arr


def program_bytes(capture: TorchCapture) -> int:
    """Bytes a real run may touch: inputs, parameters and every call's new outputs."""
    total = capture.info.input_bytes + capture.info.param_bytes
    for call in capture.calls:
        if call.kind in ("functional", "out"):
            for m in call.outputs:
                if m is not None:
                    d = IR_DTYPES.get(m.dtype)
                    total += m.numel * (d.itemsize_bytes if d is not None else 8)
    return total


def reference_at_reduced_sizes(
    path: str | Path,
    budget_bytes: int,
    *,
    entry: str | None = None,
    entry_args: str | None = None,
    inputs: str | Path | None = None,
    input_shapes: tuple[InputShape, ...] = (),
    op_fallback: OpFallback | None = None,
    train: bool = False,
    step: TrainStep | None = None,
    start: Mapping[str, int] | None = None,
    capture: TorchCapture | None = None,
    budget_seconds: float | None = None,
    float64: bool = False,
) -> ReducedReference:
    """Lower a model file at sizes whose real run (`program_bytes`) fits ``budget_bytes``.

    `reduced_reference` over the file's size constants (``path``, ``budget_bytes``,
    ``start``, ``capture``: as there); ``entry``, ``inputs``, ``train``, ``step`` say how to
    capture it and ``op_fallback`` how to lower it. With ``budget_seconds``, the
    executor's predicted time to check the program must fit it too; with ``float64``,
    the time and memory to check it widened to f64 (the float64 re-check's size, Note
    [Float64 re-check] in solar/pipeline/validation.py).

    Returns:
        ``(lowered, inputs, outputs, description, built)``; the description says which
        constants were scaled (or that the full size fits).

    Raises:
        FrontendError: E0511 when no reduction fits; loader/capture errors.
    """
    # a program the first capture could not run on meta is not tried there again
    meta = None if capture is None or capture.info.on_meta else False

    def capture_with(overrides: Mapping[str, int]) -> TorchCapture:
        src = source_for_file(
            path,
            entry=entry,
            entry_args=entry_args,
            inputs=inputs,
            overrides=overrides,
            train=train,
            input_shapes=input_shapes,
            step=step,
        )
        return capture_program(src, on_meta=meta)

    def lowered_reference(cap: TorchCapture) -> tuple[LoweredProgram, Arrays, Arrays]:
        lowered = lower_capture(cap, op_fallback=op_fallback)
        return (lowered, *reference_data(lowered, cap))

    seconds = (
        None if budget_seconds is None
        else functools.partial(_check_seconds, budget_bytes, float64=float64)
    )
    recapture = Recapture(capture_with, _sizes, program_bytes, lowered_reference, seconds)
    return reduced_reference(
        Path(path), recapture, budget_bytes, start=start, capture=capture,
        budget_seconds=budget_seconds if budget_seconds is not None else math.inf,
    )


def _check_seconds(budget_bytes: int, capture: TorchCapture, *, float64: bool = False) -> float:
    """The executor's predicted time to check ``capture``'s program (lowered without
    any LLM fallback: an uncovered op is an input, which costs it nothing), infinite
    over its memory budget for a reference budget of ``budget_bytes`` once the run
    holds its model and values (Note [Budget before the build] in `solar.budget`); with
    ``float64``, of the program widened to f64."""
    program = lower_capture(capture).program
    held = 2 * program_bytes(capture)
    return executor_seconds(
        widen_to_f64(program) if float64 else program, budget_bytes, held_bytes=held
    )


def _sizes(capture: TorchCapture) -> Mapping[str, int]:
    return capture.info.sizes


def reference_at_reduced_batch(
    capture: TorchCapture,
    budget_bytes: int,
    *,
    op_fallback: OpFallback | None = None,
    budget_seconds: float = math.inf,
    float64: bool = False,
) -> ReducedReference:
    """Lower ``capture``'s program with its inputs' batch cut until a real run fits
    ``budget_bytes`` and the executor's predicted check fits ``budget_seconds`` (with
    ``float64``: its check widened to f64, as `reference_at_reduced_sizes`).

    Raises:
        FrontendError: E0514 when the inputs have no batch dimension or no cut fits;
            capture and reference errors.
    """
    from dataclasses import replace

    from solar.frontends.pytorch.batch import batch_of_shapes

    batch = batch_of_shapes(m.shape for m in capture.inputs if m is not None)
    if batch is None:
        raise FrontendError(
            f"the inputs of {capture.name} have no batch dimension to cut", code="E0514"
        )

    def capture_at(n: int) -> TorchCapture:
        return capture_program(replace(capture.source, batch=n),
                               on_meta=None if capture.info.on_meta else False)

    def lowered_reference(cap: TorchCapture) -> tuple[LoweredProgram, Arrays, Arrays]:
        lowered = lower_capture(cap, op_fallback=op_fallback)
        return (lowered, *reference_data(lowered, cap))

    recapture = BatchRecapture(
        batch, capture_at, program_bytes, _fixed_bytes, lowered_reference,
        functools.partial(_check_seconds, budget_bytes, float64=float64),
    )
    return reduced_batch_reference(capture.name, recapture, capture, budget_bytes, budget_seconds)


def _fixed_bytes(capture: TorchCapture) -> int:
    return capture.info.param_bytes
