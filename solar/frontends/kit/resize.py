"""A model file at reduced sizes: the shared search over its module-level size constants.

Contract: ``(model file, Recapture[B], budget) -> ReducedReference``, where ``B`` is
the tracer's capture. A tracer whose program's real run would exceed
``FrontendOptions.reference_budget_bytes`` calls `reduced_reference` with a `Recapture`:
how to capture the file with some constants overridden, a capture's constants, how
many bytes a real run of a capture touches, and how to lower a capture and run it for
real. The search itself (which constants, in which order, when to stop, the
description the report shows) is `solar.reduced_sizes.reduce_sizes`, the one the validator's
``reduced-sizes`` strategy uses; it only re-captures, and the real program runs once,
at the sizes it picks. Each re-capture runs the model file anew (Note [Model-file
runs] in `solar.frontends.protocol`).

`reduced_batch_reference` is the strategy for programs without size constants (inputs
made by ``get_inputs()``, ``--inputs``, a live module's example inputs): the tracer
re-captures the program with the leading (batch) dimension of its inputs cut, the
smallest cut first estimated from how the bytes scale, then halved until it fits.

The budget (Note [Reference budget]): what a real run may touch, by default
`REFERENCE_MEMORY_FRACTION` of the validation memory (Note [Validation memory] in
`solar.budget`: 1 GiB, or ``MemAvailable`` when less): the reference run, the
arrays it keeps and the executor's own run (guarded by its own budget, half of it)
share the process. A plan must also fit the executor (`executor_seconds`).

Error codes: E0511 no reduced size fits the budget; E0514 no reduced batch fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, NamedTuple, TypeVar

import numpy as np

from solar.budget import executor_budget_bytes, format_memory, memory_budget_bytes
from solar.diagnostics import FrontendError
from solar.frontends.kit.lowered import LoweredProgram
from solar.ir import Program
from solar.reduced_sizes import RunBudget, RunCost, reduce_sizes

__all__ = [
    "REFERENCE_MEMORY_FRACTION",
    "EXECUTOR_TIME_SHARE",
    "BatchRecapture",
    "executor_seconds",
    "Recapture",
    "ReducedReference",
    "reduced_batch_reference",
    "reduced_reference",
    "reference_budget_bytes",
]

REFERENCE_MEMORY_FRACTION = 0.25
"""Share of the validation memory a real reference run may touch by default."""

EXECUTOR_TIME_SHARE = 0.5
"""Share of the validation time budget the executor's predicted check may take (the
validator plans for the same share: its work model is rough)."""

B = TypeVar("B")
Arrays = dict[str, np.ndarray]


def reference_budget_bytes(requested: int | None = None) -> int:
    """``requested``, or `REFERENCE_MEMORY_FRACTION` of the validation memory.

    >>> reference_budget_bytes(1 << 20)
    1048576
    >>> reference_budget_bytes() > 0
    True
    """
    if requested is not None:
        return requested

    return memory_budget_bytes(REFERENCE_MEMORY_FRACTION)


class ReducedReference(NamedTuple):
    """A program lowered at reduced sizes with its reference data, and the tracer's
    capture it came from (``built``: a tracer may run it again, in float64 for the
    pipeline's re-check, Note [Float64 re-check] in solar/pipeline/validation.py)."""

    lowered: LoweredProgram
    inputs: Arrays
    outputs: Arrays
    description: str
    built: object = None
    sizes: Mapping[str, int] | None = None
    """Every size constant at the reduced binding (``None``: the inputs were cut)."""


@dataclass(frozen=True, slots=True)
class Recapture(Generic[B]):
    """How a tracer captures a model file at other size constants, and runs a capture.

    Attributes:
        capture: captures the file with these module constants overridden; raises
            `FrontendError` when it cannot.
        sizes: a capture's module-level integer constants.
        program_bytes: the bytes a real run of a capture touches.
        reference: lowers a capture and runs it for real: ``(lowered, inputs, outputs)``.
        seconds: the executor's predicted time to check a capture (`executor_seconds`
            of its lowered program); ``None``: budget memory only.
    """

    capture: Callable[[Mapping[str, int]], B]
    sizes: Callable[[B], Mapping[str, int]]
    program_bytes: Callable[[B], int]
    reference: Callable[[B], tuple[LoweredProgram, Arrays, Arrays]]
    seconds: Callable[[B], float] | None = None


def executor_seconds(program: Program, reference_bytes: int, *, held_bytes: int = 0) -> float:
    """The validator's predicted time to execute ``program`` (`solar.validate.
    estimate_workload`), which a reference must also fit (Note [Reference budget]):
    a reference the executor cannot check in its time budget is no use. Infinite
    where the executor's memory estimate is over its budget for a reference budget of
    ``reference_bytes`` (`solar.budget.executor_budget_bytes`, Note
    [Validation memory]): it would refuse the run. ``held_bytes``: what the reference
    run will hold while the executor checks it (Note [Budget before the build])."""
    from solar.validate import estimate_workload

    work = estimate_workload(program)
    if work.memory_bytes > executor_budget_bytes(reference_bytes, held_bytes=held_bytes):
        return math.inf
    return work.seconds


def reduced_reference(
    path: Path,
    recapture: Recapture[B],
    budget_bytes: int,
    *,
    start: Mapping[str, int] | None = None,
    capture: B | None = None,
    budget_seconds: float = math.inf,
) -> ReducedReference:
    """Shrink a model file's size constants until a real run fits, then run it there.

    Args:
        path: the model file (named in the error).
        recapture: the tracer's way to capture the file and run a capture.
        budget_bytes: what a real run may touch.
        start: module constants to override first (the sizes the user asked for).
        capture: the capture at ``start`` when the caller has it (else captured here).
        budget_seconds: the executor's time budget for the check (with
            ``recapture.seconds``).

    Returns:
        The program at the chosen sizes, its reference data, and the description
        (``full size (...)`` when the sizes asked for fit already).

    Raises:
        FrontendError: E0511 when no reduction fits; capture errors; what
            ``recapture.reference`` raises.
    """
    base = dict(start or {})

    def rebuild(overrides: Mapping[str, int]) -> B:
        return recapture.capture({**base, **overrides})

    def cost(built: B) -> RunCost:
        seconds = recapture.seconds(built) if recapture.seconds is not None else 0.0
        return RunCost(recapture.program_bytes(built), seconds)

    first = capture if capture is not None else rebuild({})
    sizes = recapture.sizes(first)
    budget = RunBudget(budget_bytes, budget_seconds)
    found = reduce_sizes(sizes, rebuild, cost, budget, start=first)
    if not found.fits:
        raise FrontendError(
            f"no reduced size of {path.name} fits {format_memory(budget_bytes)}",
            code="E0511",
            notes=(
                f"smallest program tried: {format_memory(found.cost.bytes)}",
                f"size constants considered: {', '.join(found.candidates) or 'none'}",
            ),
        )
    lowered, inputs, outputs = recapture.reference(found.built)
    return ReducedReference(lowered, inputs, outputs, found.description, found.built,
                            dict(found.sizes))


@dataclass(frozen=True, slots=True)
class BatchRecapture(Generic[B]):
    """How a tracer captures its program with the inputs' leading dimension cut.

    Attributes:
        batch: the inputs' leading dimension at full size (`leading_batch`).
        capture: captures the program with that dimension cut to the given size;
            raises `FrontendError` when the program does not run there (a batch
            size hard-coded in the model).
        program_bytes: the bytes a real run of a capture touches.
        fixed_bytes: the bytes that do not scale with the batch (parameters).
        reference: lowers a capture and runs it for real: ``(lowered, inputs, outputs)``.
        seconds: the executor's predicted time to check a capture.
    """

    batch: int
    capture: Callable[[int], B]
    program_bytes: Callable[[B], int]
    fixed_bytes: Callable[[B], int]
    reference: Callable[[B], tuple[LoweredProgram, Arrays, Arrays]]
    seconds: Callable[[B], float]


def reduced_batch_reference(
    name: str,
    recapture: BatchRecapture[B],
    full: B,
    budget_bytes: int,
    budget_seconds: float = math.inf,
) -> ReducedReference:
    """Cut the inputs' batch until a real run fits ``budget_bytes`` and the executor's
    predicted time fits ``budget_seconds``, then run it there.

    The first cut is the largest batch whose bytes and time, scaled linearly from
    ``full`` (parameters fixed), fit; each cut that still does not fit is halved,
    down to 1.

    Raises:
        FrontendError: E0514 when no batch fits (parameters alone exceed the budget,
            or the program does not run at a smaller batch); what
            ``recapture.reference`` raises.
    """

    full_bytes, fixed = recapture.program_bytes(full), recapture.fixed_bytes(full)
    n = recapture.batch
    per_item = max(1, (full_bytes - fixed) // max(1, n))
    seconds_per_item = recapture.seconds(full) / max(1, n)
    tried: list[str] = []
    if fixed < budget_bytes and n > 1:
        b = max(1, min(n - 1, (budget_bytes - fixed) // per_item))
        if 0 < seconds_per_item < math.inf and math.isfinite(budget_seconds):
            b = max(1, min(b, int(budget_seconds / seconds_per_item)))
        while True:
            try:
                built = recapture.capture(b)
            except FrontendError as err:
                tried.append(f"batch {b}: {err.message}")
                break
            cost, seconds = recapture.program_bytes(built), recapture.seconds(built)
            check = (
                f"about {seconds:.3g} s to check"
                if math.isfinite(seconds)
                else "over the executor's memory budget"
            )
            tried.append(f"batch {b}: {format_memory(cost)}, {check}")
            if cost <= budget_bytes and seconds <= budget_seconds:
                lowered, inputs, outputs = recapture.reference(built)
                description = (
                    f"cut the inputs' batch {n}->{b} "
                    f"(program {format_memory(full_bytes)} -> {format_memory(cost)})"
                )
                return ReducedReference(lowered, inputs, outputs, description, built)
            if b == 1:
                break
            b //= 2
    raise FrontendError(
        f"no reduced batch of {name} fits {format_memory(budget_bytes)}",
        code="E0514",
        notes=(
            f"parameters and constants: {format_memory(fixed)}; full program "
            f"{format_memory(full_bytes)} at batch {n}",
            *tried,
        ),
    )
