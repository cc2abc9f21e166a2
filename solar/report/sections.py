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

from solar.report.schema import CoverageInfo, OutputCheck, UncoveredOpInfo, ValidationInfo

if TYPE_CHECKING:
    from solar.validate import ValidationResult

__all__ = ["UncoveredRow", "coverage_info", "skipped_validation", "validation_info"]


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


def coverage_info(ops_total: int, uncovered: Iterable[UncoveredRow]) -> CoverageInfo:
    """The coverage section: one row per uncovered op and the bytes share left covered.

    >>> coverage_info(0, ()).covered_bytes_fraction
    1.0
    """
    rows = tuple(
        UncoveredOpInfo(op=u.target, count=u.count, bytes_share=float(u.bytes_share))
        for u in uncovered
    )
    share = sum(r.bytes_share for r in rows)
    return CoverageInfo(
        complete=not rows,
        covered_bytes_fraction=max(0.0, 1.0 - share),
        ops_total=ops_total,
        uncovered=rows,
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
    ran = result.strategy or "none"
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


def _finite(value: float | None) -> float | None:
    """``value`` as a float, or ``None`` when it is missing, NaN or infinite.

    >>> _finite(float("nan")) is None, _finite(2)
    (True, 2.0)
    """
    if value is None or not math.isfinite(value):
        return None
    return float(value)
