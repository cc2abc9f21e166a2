"""Report sections built from other stages' results: validation and coverage.

Contract: pure functions from typed results to the report's pydantic objects, holding
the report's conventions: a non-finite error is ``null``; a full run of a program the
frontend re-lowered at reduced sizes is reported as the plan's strategy
(``reduced-sizes``, ``reduced-batch``); the covered
fraction is one minus the uncovered ops' bytes shares (docs/report.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

from solar.report.schema import (
    CoverageInfo,
    Fp32Check,
    IndependentFlops,
    OutputCheck,
    UncoveredOpInfo,
    ValidationInfo,
)

if TYPE_CHECKING:
    from solar.validate import ValidationResult

__all__ = [
    "FLOP_SHORTFALL_TOLERANCE",
    "UncoveredRow",
    "coverage_info",
    "float64_validation",
    "skipped_validation",
    "validation_info",
]

FLOP_SHORTFALL_TOLERANCE = 0.01
"""Note [FLOP shortfall]: SOLAR counts every FLOP of the ops it lowers (element-wise
ones too), the independent counter only those of contractions (matmul, convolution,
attention), with the same convention (a multiply-add is 2 FLOPs), except that SOLAR
does not count the taps of a convolution over its zero padding (``padding_flops``,
counted from shapes by the frontend) nor the products a constant mask hides
(``masked_flops``, Note [Masked FLOPs] in `solar.pipeline.prepare`). So SOLAR's FLOPs
should never fall below the counter's FLOPs of the covered ops less those; a shortfall
beyond 1% means work was dropped or mis-counted."""


class UncoveredRow(Protocol):
    """What the report needs of an op a frontend could not lower."""

    @property
    def target(self) -> str:
        """The op's name."""
        ...

    @property
    def count(self) -> int:
        """How many times the program runs it."""
        ...

    @property
    def bytes_share(self) -> float:
        """Its share of the program's tensor bytes."""
        ...

    @property
    def counted_flops(self) -> int | None:
        """Its FLOPs by the independent counter (``None``: not known)."""
        ...


def coverage_info(
    ops_total: int,
    uncovered: Iterable[UncoveredRow],
    *,
    counted_flops: int | None = None,
    padding_flops: int = 0,
    masked_flops: float = 0.0,
    counter: str = "torch.utils.flop_counter.FlopCounterMode",
    solar_flops: float | None = None,
) -> CoverageInfo:
    """The coverage section: one row per uncovered op, the bytes share left covered
    and, given an independent FLOP count, the FLOPs share outside covered ops and
    SOLAR's FLOPs against it (Note [FLOP shortfall]).

    >>> coverage_info(0, ()).covered_bytes_fraction
    1.0
    >>> c = coverage_info(0, (), counted_flops=1000, solar_flops=900.0)
    >>> c.uncovered_flops_fraction, c.independent_flops.shortfall
    (0.0, True)
    >>> coverage_info(0, (), counted_flops=1000, masked_flops=200, solar_flops=900.0
    ...               ).independent_flops.shortfall
    False
    >>> from solar.frontends.kit import UncoveredOp
    >>> coverage_info(9, (UncoveredOp("sort", 1, 0.2, "", 100),), solar_flops=300.0
    ...               ).uncovered_flops_fraction
    0.25
    """
    rows = tuple(
        UncoveredOpInfo(
            op=u.target,
            count=u.count,
            bytes_share=float(u.bytes_share),
            counted_flops=None if u.counted_flops is None else float(u.counted_flops),
        )
        for u in uncovered
    )
    share = sum(r.bytes_share for r in rows)
    independent = None
    flops_share = None
    known = [r.counted_flops for r in rows if r.counted_flops is not None]
    if counted_flops is None and rows and len(known) == len(rows) and solar_flops is not None:
        # No whole-program counter (JAX), but every uncovered op has its own count (XLA's,
        # per equation): their share of SOLAR's FLOPs plus theirs.
        total = float(solar_flops) + sum(known)
        flops_share = sum(known) / total if total > 0 else 0.0
    if counted_flops is not None:
        total = float(counted_flops)
        missing = sum(r.counted_flops or 0.0 for r in rows)
        covered = total - missing
        padding = float(min(padding_flops, covered))
        masked = float(min(masked_flops, covered - padding))
        flops_share = missing / total if total > 0 else 0.0
        if solar_flops is not None:
            expected = (covered - padding - masked) * (1.0 - FLOP_SHORTFALL_TOLERANCE)
            independent = IndependentFlops(
                counter=counter,
                total_flops=total,
                uncovered_flops=missing,
                covered_flops=covered,
                padding_flops=padding,
                masked_flops=masked,
                solar_flops=float(solar_flops),
                shortfall=solar_flops < expected,
                tolerance=FLOP_SHORTFALL_TOLERANCE,
            )
    return CoverageInfo(
        complete=not rows,
        covered_bytes_fraction=max(0.0, 1.0 - share),
        ops_total=ops_total,
        uncovered=rows,
        uncovered_flops_fraction=flops_share,
        independent_flops=independent,
    )


def skipped_validation(reason: str) -> ValidationInfo:
    """The validation section when nothing was run."""
    return ValidationInfo(
        status="skipped", strategy="none", sizes={}, fraction_checked=0.0, reason=reason
    )


def validation_info(
    result: ValidationResult,
    *,
    planned_strategy: str,
    description: str,
    sizes: Mapping[str, int],
) -> ValidationInfo:
    """The validation section of a run of the validator.

    Args:
        result: what the validator found.
        planned_strategy: what the frontend's reference plan was (``full``,
            ``reduced-sizes`` or ``reduced-batch``).
        description: the plan's own description (e.g. which sizes were scaled).
        sizes: the sizes the reference was produced at.
    """
    outputs = tuple(
        OutputCheck(
            name=o.name,
            passed=o.status == "ok",
            max_abs_error=_finite(o.max_abs_error),
            max_rel_error=_finite(o.max_rel_error),
            rtol=o.tolerance.rtol,
            atol=o.tolerance.atol,
        )
        for o in result.outputs
    )
    parts = (description, result.description, result.reason, result.mismatch)
    reason_parts = [p for p in parts if p]
    ran: str = result.strategy or "none"
    if planned_strategy in ("reduced-sizes", "reduced-batch") and ran == "full":
        ran = planned_strategy
    return ValidationInfo(
        status=result.status,
        strategy=ran,
        sizes={**sizes, **dict(result.sizes)},
        fraction_checked=float(result.checked_fraction),
        outputs=outputs,
        wall_time_s=float(result.wall_time_s),
        reason="; ".join(reason_parts) or None,
    )


def float64_validation(fp32: ValidationInfo, wide: ValidationInfo) -> ValidationInfo:
    """The section of a float64 re-check ``wide`` run after the fp32 check ``fp32``
    failed (Note [Float64 re-check] in solar/pipeline/validation.py): ``wide``'s status, outputs and
    tolerances, with the fp32 check kept in ``fp32_check`` and why it was not accepted.

    Args:
        fp32: the failed fp32 check.
        wide: the check of the IR widened to f64 against the program run in float64.
    """
    failed = tuple(o for o in fp32.outputs if not o.passed)
    worst = max(
        failed, key=lambda o: (o.max_abs_error or math.inf) / max(o.atol, 1e-300), default=None
    )
    where = (
        f" (worst `{worst.name}`: max abs error {worst.max_abs_error:.3g} against rtol "
        f"{worst.rtol:.2g}, atol {worst.atol:.2g})"
        if worst is not None and worst.max_abs_error is not None
        else ""
    )
    beyond = f"{len(failed)} of {len(fp32.outputs)} outputs beyond the fp32 tolerance{where}"
    if wide.status == "passed":
        why = (
            f"{beyond}; not accepted as a failure because the same program in float64 "
            "agrees within the float64 tolerance: the fp32 differences are rounding "
            "amplified by the program's conditioning (or tipping a discontinuity: ReLU's "
            "kink, a max, a comparison), not the IR"
        )
    else:
        why = f"{beyond}; the float64 re-check fails too: the IR computes something else"
    errors = [o.max_abs_error for o in fp32.outputs if o.max_abs_error is not None]
    rel = [o.max_rel_error for o in fp32.outputs if o.max_rel_error is not None]
    check = Fp32Check(
        max_abs_error=max(errors, default=None),
        max_rel_error=max(rel, default=None),
        outputs_checked=len(fp32.outputs),
        failed_outputs=failed,
        mismatch=fp32.reason or "",
        not_accepted=why,
    )
    head = "checked in float64 (the IR widened to f64 against the program run in float64)"
    reason = "; ".join(p for p in (head, wide.reason, f"fp32 check: {why}") if p)
    return wide.model_copy(
        update={
            "dtype": "float64",
            "fp32_check": check,
            "reason": reason,
            "wall_time_s": fp32.wall_time_s + wide.wall_time_s,
        }
    )


def _finite(value: float | None) -> float | None:
    """``value`` as a float, or ``None`` when it is missing, NaN or infinite.

    >>> _finite(float("nan")) is None, _finite(2)
    (True, 2.0)
    """
    if value is None or not math.isfinite(value):
        return None
    return float(value)
