"""Speed-of-light bounds: registered models over one roofline core.

Contract: `compute_bounds(graph, spec, *, model, precision_policy, sizes) -> Bound`.
Every model returns a LOWER bound on the run time of the program on the device
(derivations and citations: docs/bounds.md). Orderings that always hold:
``fused <= cache-aware`` and ``fused <= unfused``; every bound is non-increasing in
peaks, bandwidths and capacities.
"""

from __future__ import annotations

from solar.bounds.analyses import (
    DeviceRequirement,
    InverseRoofline,
    PlatformRow,
    cross_platform,
    inverse_roofline,
)
from solar.bounds.cache_aware import cache_aware_bound, pebble_bytes, spill_bytes
from solar.bounds.errors import BoundError
from solar.bounds.fused import fused_bound
from solar.bounds.precision import (
    PRECISION_POLICIES,
    Pipe,
    PrecisionPolicy,
    ResolvedPipe,
    policy_pipe,
    resolve_pipe,
)
from solar.bounds.registry import BOUND_MODELS, check_model, compute_bounds
from solar.bounds.roofline import (
    Bottleneck,
    Bound,
    BoundModel,
    CacheState,
    CostArrays,
    KernelBound,
    SymbolicCosts,
    evaluate_costs,
    symbolic_costs,
)
from solar.bounds.unfused import unfused_bound

__all__ = [
    "BOUND_MODELS",
    "PRECISION_POLICIES",
    "Bottleneck",
    "Bound",
    "BoundError",
    "BoundModel",
    "CacheState",
    "CostArrays",
    "DeviceRequirement",
    "InverseRoofline",
    "KernelBound",
    "Pipe",
    "PlatformRow",
    "PrecisionPolicy",
    "ResolvedPipe",
    "SymbolicCosts",
    "cache_aware_bound",
    "check_model",
    "compute_bounds",
    "cross_platform",
    "evaluate_costs",
    "fused_bound",
    "inverse_roofline",
    "pebble_bytes",
    "policy_pipe",
    "resolve_pipe",
    "spill_bytes",
    "symbolic_costs",
    "unfused_bound",
]
