"""Validation: the prepared program run against the source program's own outputs.

Contract: ``PreparedProgram + AnalyzeOptions -> ValidationInfo`` (`validate_front`).
The reference run is the one preparation already made, when it made one (Note [One
preparation path] in `solar.pipeline.prepare`); the policy (when to skip, when to plan
again within more memory, when to re-check in float64) is this module's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

import numpy as np

from solar.budget import (
    executor_budget_bytes,
    memory_budget_bytes,
    memory_pool_is_default,
    uncapped_validation_memory,
)
from solar.diagnostics import FrontendError
from solar.frontends import Progress, ValidationPlan
from solar.frontends.kit import reference_budget_bytes
from solar.frontends.protocol import RealRunCheck
from solar.ir import DType, float_dtypes, widen_to_f64
from solar.pipeline.options import AnalyzeOptions
from solar.pipeline.prepare import PreparedProgram
from solar.report import ValidationInfo, float64_validation, skipped_validation, validation_info
from solar.report.schema import OutputCheck

if TYPE_CHECKING:
    from solar.validate import ValidationResult

__all__ = ["validate_front"]


def validate_front(
    prepared: PreparedProgram, options: AnalyzeOptions, progress: Progress
) -> ValidationInfo:
    """Run the IR against the source program's own outputs, as the options say.

    A program that cannot be checked within the default validation memory is planned
    again within ``MemAvailable``'s shares (Note [Validation memory] in `solar.budget`).
    """
    info = _validate_once(prepared, options, progress)
    reference = prepared.reference
    if reference is None or not _over_default_memory(info, options):
        return info
    progress("over the 1 GiB validation memory: planning again within MemAvailable")
    reference.forget()
    with uncapped_validation_memory():
        wide = _validate_once(prepared, options, progress)
    if wide.status == "skipped":
        return info
    note = ("checked within MemAvailable: the program does not fit the 1 GiB validation "
            "memory (SOLAR_VALIDATION_MEMORY=1024 keeps the cap and skips)")
    return wide.model_copy(update={"reason": f"{wide.reason}; {note}" if wide.reason
                                   else note})


def _over_default_memory(info: ValidationInfo, options: AnalyzeOptions) -> bool:
    """Skipped for memory under the default validation memory, which may widen."""
    return info.status == "skipped" and _may_widen_memory(info.reason or "", options)


def _may_widen_memory(reason: str, options: AnalyzeOptions) -> bool:
    """``reason`` (a skip's) is memory under the default validation memory, which may
    widen (Note [Validation memory])."""
    return (options.validate != "off" and memory_pool_is_default()
            and options.reference_budget_bytes is None
            and any(w in reason.lower() for w in ("e0511", "e0514", "e0305", "memory")))


def _validate_once(
    prepared: PreparedProgram, options: AnalyzeOptions, progress: Progress
) -> ValidationInfo:
    if options.validate == "off":
        return skipped_validation("validation disabled (--validate off)")
    if prepared.reference is None and prepared.front.real_run is not None:
        return _real_run(prepared.front.real_run, options, progress)
    if prepared.reference is None:
        return skipped_validation(
            prepared.front.no_reference_reason or "no source program to compare against"
        )
    from solar.validate import validate  # only when validating (its import is not free)

    if prepared.reference.plan is None:  # preparation may have run it (constant buffers)
        progress("computing reference outputs")
    try:
        plan = prepared.reference()
    except FrontendError as err:
        # Note [Validation never blocks analysis]: under ``auto`` a program whose real
        # run cannot be made to fit (or diverges from its capture) is still analysed;
        # the report says why it was not validated. ``--validate full`` insists.
        if options.validate != "auto":
            raise
        notes = list(err.notes)
        if err.code in ("E0511", "E0514") and options.reference_budget_bytes is None:
            notes.append(_MORE_MEMORY)
        return skipped_validation(
            f"no reference run: error[{err.code}]: {'; '.join((err.message, *notes))}"
        )
    progress(f"validating IR ({plan.strategy})")
    strategy: Literal["auto", "full", "sampled"] = "auto"
    if options.validate == "full" or options.validate == "sampled":
        strategy = options.validate
    result = validate(
        plan.program,
        plan.inputs,
        plan.outputs,
        strategy=strategy,
        time_budget_s=options.time_budget_s,
        memory_budget_bytes=_executor_budget(options),
    )
    info = validation_info(
        result, planned_strategy=plan.strategy, description=plan.description, sizes=plan.sizes
    )
    if result.status == "failed":
        return _recheck_in_float64(plan, info, strategy, options, progress)
    return info


def _real_run(run: Callable[[], RealRunCheck], options: AnalyzeOptions,
              progress: Progress) -> ValidationInfo:
    """A distributed program against a real run of all its ranks (docs/distributed.md,
    "Validation against a real run"): passed, or E0556 raised on a difference; a run
    that crashes or deadlocks (E0555) is a skip under ``auto`` (Note [Validation never
    blocks analysis])."""
    progress("validating every rank against a real run")
    start = time.monotonic()
    try:
        check = run()
    except FrontendError as err:
        if options.validate != "auto":
            raise
        return skipped_validation(f"no real run: error[{err.code}]: "
                                  f"{'; '.join((err.message, *err.notes))}")
    outputs = tuple(OutputCheck(name=name, passed=True, max_abs_error=error,
                                max_rel_error=None, rtol=check.rtol, atol=check.atol)
                    for name, error in check.max_abs_error.items())
    return ValidationInfo(status="passed", strategy=f"real run on {check.what}",
                          sizes=dict(check.sizes), fraction_checked=1.0, outputs=outputs,
                          wall_time_s=time.monotonic() - start,
                          reason=f"every rank's outputs, world size {check.world}")


# Note [Float64 re-check]
# ~~~~~~~~~~~~~~~~~~~~~~~
# The tolerance policy (docs/validation.md) scales with the longest reduction feeding an
# output, not with how much the computation amplifies rounding. A deep stack of
# training-mode batch norms over a small batch (ResNet-50's step at batch 2 on 64x64
# images: the last stage normalises 8 values per channel, and each backward subtracts
# means of nearly equal terms) amplifies the rounding of every layer below, so two
# correct fp32 implementations (numpy's and torch's summation orders) differ beyond it,
# on a few elements of many outputs (ResNet-50: 254 of 645). That is the program's
# conditioning, not the IR, and taking the rounding away tells the two apart: when the
# fp32 comparison of a program whose floating types are all f32 fails, the frontend runs
# the program again in float64 (a float64 copy of the model, the same inputs,
# parameters, optimizer state and seeded draws, cast exactly), the IR is widened to f64
# (`widen_to_f64`: the same statements, every f32 made f64) and the two are compared at
# the float64 tolerance (base rtol 1e-9: rounding ~1e-16 amplified as in fp32 stays far
# below it, while a wrong lowering still differs by its own relative error). The report
# then describes the float64 check (``dtype: float64``, its outputs, tolerances, errors,
# sizes) and keeps the fp32 one (``fp32_check``: its errors, failing outputs and why it
# was not accepted). A program with a type narrower than f32 (f16, bf16, f8) rounds on
# purpose and is not re-checked: widening it would change what it computes; nor is a
# mismatch that is not finite (an fp32 overflow the wider range would hide). Why not validate such
# steps in float64 directly: the fp32 check is the evidence for the program as it runs,
# and 25 of the zoo's 33 steps pass it; the re-check costs a second real run and check
# only where fp32 fails (a wrong IR pays it too, and fails twice). docs/validation.md
# § Float64 re-check has the rest.


# Note [Float64 noise floor]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# Some outputs are rounding noise whatever the precision: a gradient that is zero in
# exact arithmetic (a key bias under softmax: flax's attention has one by default) comes
# out as ~1e-9 in fp32 and ~1e-17 in float64, and Adam's first step divides it by
# `sqrt(v) + eps`, so the updated bias is ~lr * g / eps in both: 1e-4 in fp32, 1e-12 in
# float64, a different value for every summation order. The float64 re-check cannot
# compare such an output at its base atol (1e-12) any more than fp32 could at 1e-6 (a
# linen transformer's AdamW step failed on its key biases only). The program itself
# says how much rounding moves each output: its fp32 and float64 runs differ by
# `d = max |p32 - p64|`, about the amplification times u32 (p64 is exact to u64). Two
# float64 evaluations (the IR's and the program's) then differ by about the same
# amplification times u64 each, so the re-check's atol is at least
# `16 * (u64 / u32) * d` = `3e-8 * d` (`rounding_floors`: 2 for two evaluations, 8 of
# margin). For an output rounding does not amplify, d is within the fp32 tolerance and
# the floor is ~1e-14, below the float64 policy; a wrong lowering still has to hide in
# 3e-8 of the program's own fp32 rounding, far tighter than the fp32 check.
_NOISE_MARGIN = 16 * 2.0**-53 / 2.0**-24


def rounding_floors(
    fp32: Mapping[str, np.ndarray], fp64: Mapping[str, np.ndarray]
) -> dict[str, float]:
    """The float64 re-check's least atol per output (Note [Float64 noise floor]), from
    the program's own fp32 and float64 outputs of the same run (the caller checks the
    sizes); none where shapes differ or the difference is not finite."""
    floors: dict[str, float] = {}
    for name, single in fp32.items():
        wide = fp64.get(name)
        if wide is None or np.shape(wide) != np.shape(single) or np.size(single) == 0:
            continue
        a, b = np.asarray(single), np.asarray(wide)
        if a.dtype.kind != "f" or b.dtype.kind != "f":
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            d = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
        if np.isfinite(d) and d > 0:
            floors[name] = _NOISE_MARGIN * d
    return floors


def _recheck_in_float64(
    plan: ValidationPlan,
    fp32: ValidationInfo,
    strategy: Literal["auto", "full", "sampled"],
    options: AnalyzeOptions,
    progress: Progress,
) -> ValidationInfo:
    """Note [Float64 re-check]: ``fp32`` if it cannot apply, else the float64 check."""
    dtypes = float_dtypes(plan.program)
    if plan.float64 is None or DType.F32 not in dtypes or not dtypes <= {DType.F32, DType.F64}:
        return fp32
    from solar.validate import validate

    def unchecked(why: str) -> ValidationInfo:
        reason = "; ".join(p for p in (fp32.reason, f"float64 re-check not run: {why}") if p)
        return fp32.model_copy(update={"reason": reason})

    if any(o.max_abs_error is None for o in fp32.outputs if not o.passed):
        # an overflow or NaN where the program has a finite value (or a missing output)
        # is no rounding error, and float64 could hide an fp32 overflow
        return unchecked("the fp32 mismatch is not finite (overflow, NaN or a missing "
                         "output), which rounding does not explain")
    progress("fp32 validation failed: re-checking in float64")

    try:
        wide_plan = plan.float64()
    except FrontendError as err:
        return unchecked(f"error[{err.code}]: {err.message}")
    same_run = (wide_plan.strategy, dict(wide_plan.sizes)) == (plan.strategy, dict(plan.sizes))
    floors = rounding_floors(plan.outputs, wide_plan.outputs) if same_run else {}

    def check() -> ValidationResult:
        return validate(
            widen_to_f64(wide_plan.program),
            wide_plan.inputs,
            wide_plan.outputs,
            atol_floor=floors,
            strategy=strategy,
            time_budget_s=options.time_budget_s,
            memory_budget_bytes=_executor_budget(options),
        )

    result = check()
    within = ""
    if result.status == "skipped" and _may_widen_memory(result.reason or "", options):
        # Note [Float64 re-check size]: nothing smaller fits (a model whose parameters
        # alone, widened, exceed the executor's share); planned within MemAvailable as
        # the fp32 check would be (Note [Validation memory])
        progress("float64 re-check over the 1 GiB validation memory: within MemAvailable")
        with uncapped_validation_memory():
            result = check()
        within = ("float64 re-check within MemAvailable: its widened program does not fit "
                  "the 1 GiB validation memory")
    if result.status not in ("passed", "failed"):
        return unchecked(f"{result.status}: {result.reason}")
    wide = validation_info(
        result, planned_strategy=wide_plan.strategy, description=wide_plan.description,
        sizes=wide_plan.sizes,
    )
    if (wide_plan.strategy, dict(wide_plan.sizes)) != (plan.strategy, dict(plan.sizes)):
        smaller = (f"float64 re-check smaller than the fp32 check ({plan.strategy}"
                   f"{', ' + _sizes(plan.sizes) if plan.sizes else ''}): the fp32 plan widened "
                   "to f64 does not fit the executor's budget (Note [Float64 re-check size])")
        within = "; ".join(p for p in (within, smaller) if p)
    if within:
        wide = wide.model_copy(update={"reason": "; ".join(p for p in (wide.reason, within) if p)})
    return float64_validation(fp32, wide)


_MORE_MEMORY = (
    "the budget is a share of the validation memory (Note [Validation memory]): "
    "SOLAR_VALIDATION_MEMORY=MiB (default 1024) or =available, or --reference-budget MiB, "
    "allows more"
)


def _sizes(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items())


def _executor_budget(options: AnalyzeOptions) -> int:
    """The executor's memory budget for a plan made within the reference budget (Note
    [Validation memory]); with ``--reference FILE`` half of MemAvailable: the user's
    data fixes the sizes, so there is nothing smaller to check."""
    if options.reference_file is not None:
        return memory_budget_bytes(capped=False)
    return executor_budget_bytes(reference_budget_bytes(options.reference_budget_bytes))
