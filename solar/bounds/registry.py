"""The bound-model registry and `compute_bounds`.

Contract: ``BOUND_MODELS`` maps each `BoundModel` name (kebab-case, as in reports
and on the CLI) to a function ``(graph, spec, *, precision_policy, sizes) -> Bound``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from solar.bounds.cache_aware import cache_aware_bound
from solar.bounds.errors import BoundError
from solar.bounds.fused import fused_bound
from solar.bounds.precision import PrecisionPolicy, check_policy
from solar.bounds.roofline import Bound, BoundModel, CacheState
from solar.bounds.unfused import unfused_bound
from solar.einsum import EinsumGraph
from solar.hw import HardwareSpec

__all__ = ["BOUND_MODELS", "BoundFn", "check_model", "compute_bounds"]


class BoundFn(Protocol):
    """Signature of a bound model."""

    def __call__(
        self, graph: EinsumGraph, spec: HardwareSpec, *, precision_policy: PrecisionPolicy = ...,
        sizes: Mapping[str, int] | None = ..., cache: CacheState = ...,
    ) -> Bound: ...


BOUND_MODELS: Mapping[BoundModel, BoundFn] = {
    "unfused": unfused_bound,
    "fused": fused_bound,
    "cache-aware": cache_aware_bound,
}


def check_model(model: str) -> BoundModel:
    """Validate a bound-model name.

    Raises:
        BoundError: E0450 unknown model (the message lists the valid ones).

    >>> check_model("cache-aware")
    'cache-aware'
    """
    if model not in BOUND_MODELS:
        raise BoundError(
            f"unknown bound model `{model}`; valid: {', '.join(BOUND_MODELS)}", code="E0450"
        )
    return model  # type: ignore[return-value]


def compute_bounds(
    graph: EinsumGraph, spec: HardwareSpec, *, model: BoundModel,
    precision_policy: PrecisionPolicy = "default", sizes: Mapping[str, int] | None = None,
    cache: CacheState = "warm",
) -> Bound:
    """Evaluate one bound model on one device at one size binding.

    Args:
        graph: the lifted program.
        spec: the device.
        model: ``unfused``, ``fused`` or ``cache-aware``.
        precision_policy: see `solar.bounds.precision`.
        sizes: free-size overrides (defaults: the program's bindings).
        cache: ``warm`` (default; Note [Warm cache]) or ``cold``.

    Returns:
        The bound.

    Raises:
        BoundError: E0450 unknown model; E0451 unknown policy; E0452 no usable peak.
        IRVerifyError: invalid size binding (E0220/E0221).
    """
    fn = BOUND_MODELS[check_model(model)]
    if cache not in ("warm", "cold"):
        raise BoundError(f"unknown cache state `{cache}`; valid: warm, cold", code="E0454")
    return fn(graph, spec, precision_policy=check_policy(precision_policy), sizes=sizes,
              cache=cache)
