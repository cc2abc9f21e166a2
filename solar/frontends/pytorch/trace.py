"""Entry points of the PyTorch capture: a model file, or a live module, to a `TorchCapture`.

Contract: ``trace_model_file`` / ``trace_module`` describe the program as a
`ProgramSource` and capture it at ATen level (`solar.frontends.pytorch.capture`); torch
is imported lazily, inside the capture.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from solar.frontends.inputs import InputShape
from solar.frontends.pytorch.capture import TorchCapture, capture_program
from solar.frontends.pytorch.loader import ProgramSource, source_for_file
from solar.frontends.pytorch.train_step import TrainStep

__all__ = ["trace_model_file", "trace_module"]


def trace_model_file(
    path: str | Path | None,
    *,
    entry: str | None = None,
    entry_args: str | None = None,
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
        entry_args: JSON arguments that build the entry (``--entry-args``).
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
    source = source_for_file(
        path,
        entry=entry,
        entry_args=entry_args,
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
