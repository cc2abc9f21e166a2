"""The bounds a precision what-if gives, for the report's hint.

Contract: ``(CompiledCosts, spec, policy, sizes, cache) -> bounds | None``
(`bf16_what_if`): every model's bound under ``--precision bf16`` (Note [Precision what-if
bytes] in `solar.bounds.recast`), which the summary's hint promises (Note [Hints that
move the bound] in `solar.report.render_profile`).
"""

from __future__ import annotations

from collections.abc import Mapping

from solar.bounds.costs import CompiledCosts
from solar.bounds.errors import BoundError
from solar.bounds.precision import PrecisionPolicy
from solar.bounds.recast import recast_dtype
from solar.bounds.registry import compute_bound_set
from solar.bounds.roofline import Bound
from solar.hw import HardwareSpec
from solar.options import CacheState

__all__ = ["bf16_what_if"]


def bf16_what_if(
    compiled: CompiledCosts, spec: HardwareSpec, *, precision: PrecisionPolicy,
    sizes: Mapping[str, int] | None, cache: CacheState,
) -> tuple[Bound, ...] | None:
    """Every model's bound under ``--precision bf16``, what the report's hint promises
    (Note [Hints that move the bound] in `solar.report.render_profile`): ``None`` when
    ``precision`` already recasts, or when the device has no usable peak for it."""
    if recast_dtype(precision) is not None:
        return None

    try:
        return compute_bound_set(compiled, spec, precision_policy="bf16", sizes=sizes,
                                 cache=cache)
    except BoundError:
        return None
