"""The PyTorch frontend: any model file to Affine Loop IR, deterministically and offline.

Contract: ``model file | nn.Module + inputs -> TorchCapture -> LoweredProgram``, plus
reference values for validation. Torch is imported lazily inside functions, so
``import solar.frontends.pytorch`` works without torch installed.

Pipeline::

    capture = trace_model_file("samples/torch/matmul.py")      # ATen calls, fake tensors
    lowered = lower_capture(capture)                            # IR program + coverage
    inputs, outputs = reference_data(lowered, capture)          # real values by IR name

See capture.py (recording), driver.py (lowering, naming, aliasing), reference.py
(reference values, reduced sizes) and registry.py (the lowering table API).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from solar.frontends.inputs import InputShape
from solar.frontends.kit import LoweredProgram, UncoveredOp, UncoveredValue
from solar.frontends.pytorch.capture import CaptureInfo, TorchCapture
from solar.frontends.pytorch.driver import lower_capture
from solar.frontends.pytorch.frontend import TorchFrontend
from solar.frontends.pytorch.loader import ProgramSource, source_for_file
from solar.frontends.pytorch.reference import (
    ReducedReference,
    reference_at_reduced_batch,
    reference_at_reduced_sizes,
    reference_data,
)
from solar.frontends.pytorch.registry import LOWERINGS, OpCall, OpFallback
from solar.frontends.pytorch.train_step import OptimizerSpec, TrainStep, phase_of_kernel

__all__ = [
    "LOWERINGS",
    "CaptureInfo",
    "LoweredProgram",
    "OpCall",
    "OpFallback",
    "OptimizerSpec",
    "ProgramSource",
    "ReducedReference",
    "TorchCapture",
    "TorchFrontend",
    "TrainStep",
    "UncoveredOp",
    "UncoveredValue",
    "lower_capture",
    "reference_at_reduced_batch",
    "phase_of_kernel",
    "reference_at_reduced_sizes",
    "reference_data",
    "register_lowerings",
    "trace_model_file",
    "trace_module",
]

_loaded = False


def register_lowerings() -> None:
    """Import every ``ops_*`` module of this package (each registers its lowerings).

    Op modules are discovered, not listed, so families written separately register
    themselves as soon as their module exists. Idempotent.
    """
    global _loaded
    if _loaded:
        return
    folder = str(Path(__file__).resolve().parent)
    for info in sorted(pkgutil.iter_modules([folder]), key=lambda m: m.name):
        if info.name.startswith("ops_"):
            importlib.import_module(f"{__name__}.{info.name}")
    _loaded = True


def trace_model_file(
    path: str | Path | None,
    *,
    entry: str | None = None,
    inputs: str | Path | None = None,
    overrides: dict[str, int] | None = None,
    real: bool = False,
    train: bool = False,
    input_shapes: tuple[InputShape, ...] = (),
    step: TrainStep | None = None,
    on_meta: bool | None = None,
) -> TorchCapture:
    """Capture a model file at ATen level.

    Args:
        path: a Python file following the convention (``Model``, ``get_inputs``,
            ``get_init_inputs``), or defining the ``entry`` function; ``None`` with
            ``entry="pkg.mod:fn"`` imports ``pkg.mod`` instead.
        entry: call this function instead of ``Model`` (``"fn"`` or ``"module:fn"``).
        inputs: ``.npz``/``.pt`` file with the entry function's positional inputs
            (default: the file's ``get_inputs()``).
        overrides: replace module-level integer constants (sizes) before running.
        real: capture with real tensors (default: fake tensors, nothing allocated).
        train: keep the model in training mode (default: ``eval()``).
        input_shapes: inputs given by shape instead (``--input-shape``).
        step: capture one training step around the model (train_step.py).
        on_meta: capture on the meta device only (``True``), never (``False``), or
            try it first (``None``; Note [Meta re-captures]).

    Returns:
        The capture.

    Raises:
        FrontendError: E0501-E0507 (see loader.py and capture.py).
    """
    from solar.frontends.pytorch.capture import capture_program

    source = source_for_file(
        path,
        entry=entry,
        inputs=inputs,
        overrides=overrides,
        train=train,
        input_shapes=input_shapes,
        step=step,
    )
    return capture_program(source, real=real, on_meta=on_meta)


def trace_module(
    module: Any,
    example_inputs: Sequence[Any],
    *,
    kwargs: Mapping[str, Any] | None = None,
    real: bool = False,
    train: bool = False,
    step: TrainStep | None = None,
) -> TorchCapture:
    """Capture a live ``nn.Module`` (or any callable) on example inputs.

    The module's parameters are replaced by fake tensors for the capture (nothing is
    computed); the reference path later runs the module itself on ``example_inputs``.

    Args:
        module: an ``nn.Module`` or a callable taking ``example_inputs``.
        example_inputs: positional inputs.
        kwargs: keyword inputs (their tensors are program inputs after the positional ones).
        real: capture with the real tensors.
        train: keep the module in training mode (default: ``eval()``).
        step: capture one training step around the module (train_step.py).

    Returns:
        The capture.
    """
    from solar.frontends.pytorch.capture import capture_program

    name = getattr(module, "__name__", None) or type(module).__name__
    source = ProgramSource(
        name=str(name),
        target=module,
        example_inputs=tuple(example_inputs),
        example_kwargs=tuple((kwargs or {}).items()),
        train=train,
        step=step,
    )
    return capture_program(source, real=real)
