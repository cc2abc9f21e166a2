"""SOLAR: speed-of-light analysis for PyTorch and JAX programs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solar.options import DEFAULT_ARCH

if TYPE_CHECKING:
    from solar.options import PrecisionPolicy, ValidateMode
    from solar.report import Report

__version__ = "0.1.0"

__all__ = ["__version__", "analyze"]


def analyze(
    model: object,
    example_inputs: Sequence[object] = (),
    kwargs: Mapping[str, object] | None = None,
    *,
    arch: str | Sequence[str] = DEFAULT_ARCH,
    precision: PrecisionPolicy = "default",
    validate: ValidateMode = "auto",
    train: bool = False,
) -> Report:
    """Analyse a live PyTorch module on example inputs; returns the `Report`.

    The module runs in ``eval()`` mode unless ``train`` (then dropout draws, and the
    draws are validated with the values the real run drew). ``kwargs`` are keyword
    inputs (``model(*example_inputs, **kwargs)``); the outputs may be any nesting of
    tuples, lists, dicts, dataclasses and ``ModelOutput`` of tensors.

    >>> # report = solar.analyze(model, (x,), arch=["H100_SXM", "B200"])
    >>> # print(solar.report.render_text(report))

    Raises:
        solar.diagnostics.SolarError: any stage's diagnostic.
    """
    from solar.pipeline import AnalyzeOptions, analyze_module

    archs = (arch,) if isinstance(arch, str) else tuple(arch)
    options = AnalyzeOptions(archs=archs, precision=precision, validate=validate, train=train)
    return analyze_module(model, example_inputs, options, kwargs=kwargs)
