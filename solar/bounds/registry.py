"""The bound-model registry, `compute_bounds` and `compute_bound_set`.

Contract: ``BOUND_MODELS`` maps each `BoundModel` name (kebab-case, as in reports
and on the CLI) to a function ``(compiled, spec, *, precision_policy, sizes, cache)
-> Bound`` over a graph's `CompiledCosts`. `compute_bounds` evaluates one model,
`compute_bound_set` several on one device (the fused bound, which floors the
unfused one, is computed once).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

from solar.bounds.cache_aware import cache_aware_bound
from solar.bounds.costs import CompiledCosts, as_compiled
from solar.bounds.errors import BoundError, CountOverflowError
from solar.bounds.fused import fused_bound
from solar.bounds.precision import PrecisionPolicy, check_policy
from solar.bounds.roofline import Bound, BoundModel, CacheState
from solar.bounds.unfused import unfused_bound
from solar.einsum import EinsumGraph
from solar.hw import HardwareSpec

__all__ = ["BOUND_MODELS", "BoundFn", "check_model", "compute_bound_set", "compute_bounds"]


class BoundFn(Protocol):
    """Signature of a bound model."""

    def __call__(
        self, compiled: CompiledCosts, spec: HardwareSpec, *,
        precision_policy: PrecisionPolicy = ..., sizes: Mapping[str, int] | None = ...,
        cache: CacheState = ...,
    ) -> Bound: ...


BOUND_MODELS: Mapping[BoundModel, BoundFn] = {
    "unfused": unfused_bound,
    "fused": fused_bound,
    "cache-aware": cache_aware_bound,
}
_CACHE_STATES: tuple[CacheState, ...] = ("warm", "cold")


def check_model(model: str) -> BoundModel:
    """Validate a bound-model name.

    Raises:
        BoundError: E0450 unknown model (the message lists the valid ones).

    >>> check_model("cache-aware")
    'cache-aware'
    """
    for known in BOUND_MODELS:
        if model == known:
            return known
    raise BoundError(
        f"unknown bound model `{model}`; valid: {', '.join(BOUND_MODELS)}", code="E0450"
    )


def _check_cache(cache: str) -> CacheState:
    for known in _CACHE_STATES:
        if cache == known:
            return known
    raise BoundError(f"unknown cache state `{cache}`; valid: warm, cold", code="E0454")


def compute_bounds(
    graph: EinsumGraph | CompiledCosts, spec: HardwareSpec, *, model: BoundModel,
    precision_policy: PrecisionPolicy = "default", sizes: Mapping[str, int] | None = None,
    cache: CacheState = "warm",
) -> Bound:
    """Evaluate one bound model on one device at one size binding.

    Args:
        graph: the lifted program, or its `CompiledCosts` (compile once with
            `compile_costs` to evaluate many bounds of one graph).
        spec: the device.
        model: ``unfused``, ``fused`` or ``cache-aware``.
        precision_policy: see `solar.bounds.precision`.
        sizes: free-size overrides (defaults: the program's bindings).
        cache: ``warm`` (default; Note [Warm cache]) or ``cold``.

    Returns:
        The bound.

    Raises:
        BoundError: E0450 unknown model; E0451 unknown policy; E0452 no usable peak;
            E0454 unknown cache state.
        IRVerifyError: invalid size binding (E0220/E0221).
    """
    fn = BOUND_MODELS[check_model(model)]
    cache = _check_cache(cache)
    policy = check_policy(precision_policy)
    bound = fn(as_compiled(graph), spec, precision_policy=policy, sizes=sizes, cache=cache)
    return _finite(bound)


def _finite(bound: Bound) -> Bound:
    """``bound``, once every figure in it is known finite (E0455 otherwise).

    Counts are checked as they are evaluated; this catches a sum or a product of
    finite terms that overflows, so that ``inf`` or ``nan`` is never reported as a bound.
    """
    figures = [bound.time_s, bound.compute_time_s, bound.memory_time_s, bound.dram_bytes,
               bound.l2_bytes, bound.flops, *bound.flops_by_pipe.values(),
               *bound.compute_time_s_by_pipe.values()]
    if all(math.isfinite(x) for x in figures):
        return bound
    raise CountOverflowError(
        f"the {bound.model} bound on {bound.device} overflows a 64-bit float at these sizes",
        notes=("the program's FLOP or byte counts are too large (over 1.8e308 in total)",),
    )


def compute_bound_set(
    graph: EinsumGraph | CompiledCosts, spec: HardwareSpec, *,
    models: Sequence[BoundModel] = tuple(BOUND_MODELS),
    precision_policy: PrecisionPolicy = "default", sizes: Mapping[str, int] | None = None,
    cache: CacheState = "warm",
) -> tuple[Bound, ...]:
    """Several bound models on one device at one binding, in the order of ``models``.

    The same values as `compute_bounds` per model; the fused bound is computed once
    and serves as the unfused bound's floor.

    Args:
        graph: the lifted program, or its `CompiledCosts`.
        spec: the device.
        models: the models, in the order wanted.
        precision_policy: see `solar.bounds.precision`.
        sizes: free-size overrides (defaults: the program's bindings).
        cache: ``warm`` (default; Note [Warm cache]) or ``cold``.

    Returns:
        One bound per model.

    Raises:
        BoundError: as `compute_bounds`.
        IRVerifyError: invalid size binding (E0220/E0221).
    """
    models = tuple(check_model(m) for m in models)
    cache = _check_cache(cache)
    policy = check_policy(precision_policy)
    compiled = as_compiled(graph)
    fused = None
    if "fused" in models or "unfused" in models:
        fused = fused_bound(compiled, spec, precision_policy=policy, sizes=sizes, cache=cache)
    out = []
    for model in models:
        if model == "fused" and fused is not None:
            out.append(fused)
        elif model == "unfused":
            out.append(unfused_bound(compiled, spec, precision_policy=policy, sizes=sizes,
                                     cache=cache, fused=fused))
        else:
            out.append(BOUND_MODELS[model](compiled, spec, precision_policy=policy, sizes=sizes,
                                           cache=cache))
    return tuple(_finite(b) for b in out)
