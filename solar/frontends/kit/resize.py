"""A model file at reduced sizes: the shared search over its module-level size constants.

Contract: ``(model file, Recapture[B], budget) -> ReducedReference``, where ``B`` is
the tracer's capture. A tracer whose program's real run would exceed
``FrontendOptions.reference_budget_bytes`` calls `reduced_reference` with a `Recapture`:
how to capture the file with some constants overridden, a capture's constants, how
many bytes a real run of a capture touches, and how to lower a capture and run it for
real. The search itself (which constants, in which order, when to stop, the
description the report shows) is `solar.validate.reduce_sizes`, the one the validator's
``reduced-sizes`` strategy uses; it only re-captures, and the real program runs once,
at the sizes it picks. Each re-capture runs the model file anew (Note [Model-file
runs] in `solar.frontends.protocol`).

Error codes: E0511 no reduced size fits the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

import numpy as np

from solar.diagnostics import FrontendError
from solar.frontends.kit.lowered import LoweredProgram

__all__ = ["Recapture", "ReducedReference", "reduced_reference"]

B = TypeVar("B")
Arrays = dict[str, np.ndarray]


class ReducedReference(NamedTuple):
    """A program lowered at reduced sizes with its reference data."""

    lowered: LoweredProgram
    inputs: Arrays
    outputs: Arrays
    description: str


@dataclass(frozen=True, slots=True)
class Recapture(Generic[B]):
    """How a tracer captures a model file at other size constants, and runs a capture.

    Attributes:
        capture: captures the file with these module constants overridden; raises
            `FrontendError` when it cannot.
        sizes: a capture's module-level integer constants.
        program_bytes: the bytes a real run of a capture touches.
        reference: lowers a capture and runs it for real: ``(lowered, inputs, outputs)``.
    """

    capture: Callable[[Mapping[str, int]], B]
    sizes: Callable[[B], Mapping[str, int]]
    program_bytes: Callable[[B], int]
    reference: Callable[[B], tuple[LoweredProgram, Arrays, Arrays]]


def reduced_reference(
    path: Path,
    recapture: Recapture[B],
    budget_bytes: int,
    *,
    start: Mapping[str, int] | None = None,
    capture: B | None = None,
) -> ReducedReference:
    """Shrink a model file's size constants until a real run fits, then run it there.

    Args:
        path: the model file (named in the error).
        recapture: the tracer's way to capture the file and run a capture.
        budget_bytes: what a real run may touch.
        start: module constants to override first (the sizes the user asked for).
        capture: the capture at ``start`` when the caller has it (else captured here).

    Returns:
        The program at the chosen sizes, its reference data, and the description
        (``full size (...)`` when the sizes asked for fit already).

    Raises:
        FrontendError: E0511 when no reduction fits; capture errors; what
            ``recapture.reference`` raises.
    """
    # the validator's package is imported only when a reference is needed (not free)
    from solar.validate.reduced import RunBudget, RunCost, format_bytes, reduce_sizes

    base = dict(start or {})

    def rebuild(overrides: Mapping[str, int]) -> B:
        return recapture.capture({**base, **overrides})

    def cost(built: B) -> RunCost:
        return RunCost(recapture.program_bytes(built))

    first = capture if capture is not None else rebuild({})
    sizes = recapture.sizes(first)
    found = reduce_sizes(sizes, rebuild, cost, RunBudget(budget_bytes), start=first)
    if not found.fits:
        raise FrontendError(
            f"no reduced size of {path.name} fits {format_bytes(budget_bytes)}",
            code="E0511",
            notes=(
                f"smallest program tried: {format_bytes(found.cost.bytes)}",
                f"size constants considered: {', '.join(found.candidates) or 'none'}",
            ),
        )
    lowered, inputs, outputs = recapture.reference(found.built)
    return ReducedReference(lowered, inputs, outputs, found.description)
