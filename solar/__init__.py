"""SOLAR: speed-of-light analysis for PyTorch and JAX programs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solar import torchvision_shim
from solar.options import DEFAULT_ARCH
from solar.version import __version__

if TYPE_CHECKING:
    from solar.options import OptimizerChoice, PrecisionPolicy, ValidateMode
    from solar.report import Report

__all__ = ["__version__", "analyze"]

torchvision_shim.install()  # PyPI's CUDA torchvision beside CPU torch: see the module


def analyze(
    model: object,
    example_inputs: Sequence[object] = (),
    kwargs: Mapping[str, object] | None = None,
    *,
    arch: str | Sequence[str] = DEFAULT_ARCH,
    precision: PrecisionPolicy = "default",
    validate: ValidateMode = "auto",
    train: bool = False,
    optimizer: OptimizerChoice = "auto",
    train_mode: bool = False,
) -> Report:
    """Analyse a live PyTorch module on example inputs; returns the `Report`.

    ``train=True`` bounds one training step (forward, default loss = mean of the output,
    backward for the parameters and inputs that require grad, ``optimizer`` update;
    docs/training.md); the report's ``training`` section has the phases. The module
    runs in ``eval()`` mode unless ``train`` or ``train_mode`` (a training-mode forward:
    dropout draws, validated with the values the real run drew). ``kwargs`` are keyword
    inputs (``model(*example_inputs, **kwargs)``); the outputs may be any nesting of
    tuples, lists, dicts, dataclasses and ``ModelOutput`` of tensors.

    >>> # report = solar.analyze(model, (x,), arch=["H100_SXM", "B200"])
    >>> # step = solar.analyze(model, (x,), train=True, optimizer="adamw")
    >>> # print(solar.report.render_text(report))

    Raises:
        solar.diagnostics.SolarError: any stage's diagnostic.
    """
    from solar.pipeline import AnalyzeOptions, analyze_module

    archs = (arch,) if isinstance(arch, str) else tuple(arch)
    options = AnalyzeOptions(
        archs=archs,
        precision=precision,
        validate=validate,
        train=train or train_mode,
        train_step=train,
        optimizer=optimizer,
    )
    return analyze_module(model, example_inputs, options, kwargs=kwargs)
