"""Speed-of-light bounds: registered models over one roofline core.

Contract: ``compile_costs(graph) -> CompiledCosts`` once per graph, then
`compute_bounds(compiled, spec, *, model, precision_policy, sizes, cache) -> Bound`
(or `compute_bound_set` for several models on one device; both also accept the
graph itself for one-shot use). Every model returns a LOWER bound on the run time
of the program on the device (derivations and citations: docs/bounds.md).
Orderings that always hold: ``fused <= cache-aware`` and ``fused <= unfused``;
every bound is non-increasing in peaks, bandwidths and capacities. Bounds never
write into the graph.
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
from solar.bounds.costs import (
    CompiledCosts,
    CostArrays,
    SymbolicCosts,
    compile_costs,
    evaluate_costs,
    symbolic_costs,
)
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
from solar.bounds.recast import recast_costs, recast_program
from solar.bounds.registry import BOUND_MODELS, check_model, compute_bound_set, compute_bounds
from solar.bounds.roofline import (
    Bottleneck,
    Bound,
    BoundModel,
    CacheState,
    KernelBound,
    arithmetic_intensity,
    memory_time_s,
    pipe_labels,
    unit_time_of,
)
from solar.bounds.unfused import unfused_bound
from solar.bounds.what_if import bf16_what_if

__all__ = [
    "BOUND_MODELS",
    "PRECISION_POLICIES",
    "Bottleneck",
    "Bound",
    "BoundError",
    "BoundModel",
    "CacheState",
    "CompiledCosts",
    "CostArrays",
    "DeviceRequirement",
    "InverseRoofline",
    "KernelBound",
    "Pipe",
    "PlatformRow",
    "PrecisionPolicy",
    "ResolvedPipe",
    "SymbolicCosts",
    "arithmetic_intensity",
    "bf16_what_if",
    "cache_aware_bound",
    "check_model",
    "compile_costs",
    "compute_bound_set",
    "compute_bounds",
    "cross_platform",
    "evaluate_costs",
    "fused_bound",
    "inverse_roofline",
    "memory_time_s",
    "pipe_labels",
    "pebble_bytes",
    "policy_pipe",
    "recast_costs",
    "recast_program",
    "resolve_pipe",
    "spill_bytes",
    "symbolic_costs",
    "unfused_bound",
    "unit_time_of",
]
