"""The PyTorch frontend's validation plans: which real run the IR is checked against.

Note [Reference strategies] (the order `ReferencePlanner.plan` tries) and Note [Float64
re-check size] (the plan of the float64 re-check, Note [Float64 re-check] in
solar/pipeline/validation.py) live here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from solar.diagnostics import FrontendError
from solar.frontends.protocol import FrontendOptions, PlanStrategy, ValidationPlan

if TYPE_CHECKING:
    import numpy as np

    from solar.frontends.kit import LoweredProgram, ReducedReference
    from solar.frontends.pytorch.capture import TorchCapture
    from solar.frontends.pytorch.registry import OpFallback

__all__ = ["ReferencePlanner", "reduced_plan"]


class RealBuild(Protocol):
    def for_reference(self, capture: TorchCapture) -> TorchCapture: ...

    def for_float64(self, capture: TorchCapture) -> TorchCapture: ...


Reduced = Callable[[int, float, bool], ValidationPlan]


def _float64_values(
    lowered: LoweredProgram, capture: TorchCapture, budget: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The real run of ``capture`` again in float64 (Note [Float64 re-check] in
    solar/pipeline/validation.py): a float64 copy of the model, the same inputs, parameters,
    optimizer state and seeded draws, cast; ``(inputs, outputs)`` by IR name. A
    ``capture`` whose source is float64 already (`RealBuild.for_float64`: a float64
    copy of the reference's own build) runs as it is.

    The float64 run touches twice the fp32 run's bytes; it may use twice the reference
    budget (by default half of ``MemAvailable``, the executor's own share), since the
    fp32 run has finished.

    Raises:
        FrontendError: E0511 when the float64 run exceeds twice ``budget``; the
            reference run's own errors.
    """
    from solar.budget import format_memory
    from solar.frontends.pytorch.reference import program_bytes, reference_values

    need = 2 * program_bytes(capture)
    if need > 2 * budget:
        raise FrontendError(
            f"the float64 run needs about {format_memory(need)}, over twice the reference "
            f"budget ({format_memory(budget)})",
            code="E0511",
        )
    wide = capture
    if not capture.source.float64:
        wide = replace(capture, source=replace(capture.source, float64=True))
    inputs, outputs, _ = reference_values(lowered, wide)
    return inputs, outputs


def reduced_plan(
    red: ReducedReference, strategy: PlanStrategy, sizes: dict[str, int], budget: int
) -> ValidationPlan:
    """The plan of a reduced reference; its float64 re-check re-runs its own capture
    (sized for it when the search was asked to be, Note [Float64 re-check size])."""
    from solar.frontends.pytorch.capture import TorchCapture

    built = red.built
    if not isinstance(built, TorchCapture):
        return ValidationPlan(red.lowered.program, red.inputs, red.outputs, strategy,
                              red.description, sizes=sizes)

    def float64() -> ValidationPlan:
        inputs, outputs = _float64_values(red.lowered, built, budget)
        return ValidationPlan(red.lowered.program, inputs, outputs, strategy,
                              red.description, sizes=sizes)

    return ValidationPlan(red.lowered.program, red.inputs, red.outputs, strategy,
                          red.description, sizes=sizes, float64=float64)


# Note [Float64 re-check size]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The float64 re-check (Note [Float64 re-check] in solar/pipeline/validation.py) executes
# the IR widened to f64: twice the bytes of the fp32 check, whose plan was sized to fit
# the executor's budget, not twice it (issue 29: a 1024->4096->1024 MLP step at batch
# 256 checks in 290 MiB in fp32 and needs 579 MiB widened, over the 512 MiB executor
# budget, and its re-check used to be skipped). The re-check is therefore planned on its
# own: at the fp32 plan's sizes when the widened program's check fits the executor's
# memory and time (`executor_seconds`), else re-captured smaller by the same searches
# the fp32 plan uses (size constants, then the batch), each judging a candidate by its
# widened check (``float64=True``). The re-check's sizes may so be smaller than the fp32
# check's; the validation reason then says so and gives the fp32 check's. It checks the
# same lowering at smaller sizes, so agreement there still says the fp32 differences
# came from rounding, not from the IR. Where nothing smaller fits (the MLP above: its
# parameters alone, widened, are most of the budget, and it has no size constants), the
# pipeline plans the same check within MemAvailable, as it does an fp32 check (Note
# [Validation memory]), and the reason says so.


class ReferencePlanner:
    """Note [Reference strategies]: the program at full size when its real run fits the
    budget (memory, and the executor's predicted time to check it); else re-lowered at
    smaller size constants (a model file that has them); else with its inputs' batch
    cut; else, when only the time is over, at full size (the validator samples it or
    says why not); else E0511 with every reason (the pipeline then reports validation
    ``skipped``, never fails the analysis)."""

    def __init__(
        self,
        capture: TorchCapture,
        lowered: LoweredProgram,
        options: FrontendOptions,
        reduced: Reduced | None,
        fallback: OpFallback | None,
        real: RealBuild,
    ) -> None:
        from solar.frontends.kit import EXECUTOR_TIME_SHARE, reference_budget_bytes

        self.capture, self.lowered, self.reduced, self.fallback = (
            capture, lowered, reduced, fallback
        )
        self.real = real
        self.budget = reference_budget_bytes(options.reference_budget_bytes)
        self.seconds = options.time_budget_s * EXECUTOR_TIME_SHARE

    def plan(self) -> ValidationPlan:
        from solar.frontends.kit import executor_seconds
        from solar.frontends.pytorch.reference import program_bytes

        fits_bytes = program_bytes(self.capture) <= self.budget
        # Note [Budget before the build] in `solar.budget`
        held = 2 * program_bytes(self.capture)
        seconds = executor_seconds(self.lowered.program, self.budget, held_bytes=held)
        if fits_bytes and seconds <= self.seconds:
            return self._with_float64_size(self._full())
        try:
            return self._with_float64_size(self._smaller(float64=False))
        except FrontendError as err:
            if err.code != "E0511" or not fits_bytes:
                raise
            if seconds == math.inf:  # its check would be refused: do not build it
                raise FrontendError(err.message, code="E0511", notes=(
                    *err.notes, "the full program's run fits the reference budget, but its "
                    "check would not fit the executor's memory beside the model and values "
                    "the run holds")) from None
        return self._with_float64_size(self._full())  # only the time is over: sampled

    def _full(self) -> ValidationPlan:
        from solar.frontends.pytorch.reference import reference_values

        capture, lowered, sizes = self.capture, self.lowered, dict(self.capture.info.sizes)
        inputs, outputs, diverged = reference_values(lowered, self.real.for_reference(capture))
        note = (
            f"the real run left the captured calls {diverged} (control flow on tensor "
            "values or on tracing): outputs compared end to end"
            if diverged
            else ""
        )

        def float64() -> ValidationPlan:
            ins, outs = _float64_values(lowered, self.real.for_float64(capture), self.budget)
            return ValidationPlan(lowered.program, ins, outs, "full", sizes=sizes)

        return ValidationPlan(lowered.program, inputs, outputs, "full", note, sizes=sizes,
                              float64=float64)

    def _smaller(self, *, float64: bool) -> ValidationPlan:
        """At smaller size constants, else with the batch cut (E0511 if neither); with
        ``float64``, sized for the float64 re-check (Note [Float64 re-check size])."""
        from solar.frontends.pytorch.reference import reference_at_reduced_batch

        tried: list[str] = []
        if self.reduced is not None and self.capture.info.sizes:
            try:
                return self.reduced(self.budget, self.seconds, float64)
            except FrontendError as err:
                if err.code != "E0511":
                    raise
                tried += [err.message, *err.notes]
        try:
            red = reference_at_reduced_batch(
                self.capture, self.budget, op_fallback=self.fallback,
                budget_seconds=self.seconds, float64=float64,
            )
        except FrontendError as err:
            if err.code != "E0514":
                raise
            tried += [err.message, *err.notes]
        else:
            return reduced_plan(red, "reduced-batch", dict(self.capture.info.sizes),
                                self.budget)
        raise FrontendError(
            f"no reduced program of {self.capture.name} fits the reference budget "
            f"({self.budget / 2**20:,.1f} MiB)",
            code="E0511",
            notes=tuple(tried),
        )

    def _with_float64_size(self, plan: ValidationPlan) -> ValidationPlan:
        """Note [Float64 re-check size]: ``plan``, whose re-check runs smaller when its
        own widened check would not fit."""
        own = plan.float64
        if own is None:
            return plan

        def float64() -> ValidationPlan:
            from solar.frontends.kit import executor_seconds
            from solar.ir import widen_to_f64

            if executor_seconds(widen_to_f64(plan.program), self.budget) > self.seconds:
                try:
                    wide = self._smaller(float64=True)
                except FrontendError as err:
                    if err.code != "E0511":
                        raise
                else:
                    if wide.float64 is not None:
                        return wide.float64()
            return own()

        return replace(plan, float64=float64)
