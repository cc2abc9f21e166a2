"""The fused model: the whole program as one kernel with unlimited on-chip memory.

Contract: ``(EinsumGraph, HardwareSpec) -> Bound``. Only compulsory traffic moves
through DRAM: each distinct element of the program's inputs and parameters read
once (cold cache), each distinct element of its outputs written once.
Intermediates (temps, locals) never leave the chip. The bound is

    time >= max(max over pipes of FLOPs_pipe / peak_pipe, compulsory bytes / DRAM bw)

Compute time is split per pipe and combined with a max (Note [Overlapping units]
in `solar.bounds.roofline`). Any execution of the program, fused or not, moves
at least the compulsory bytes and executes every FLOP, so this is a lower bound
for every model; `unfused` and `cache-aware` are never below it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from solar.bounds.precision import PrecisionPolicy
from solar.bounds.roofline import (
    Bound,
    CacheState,
    CostArrays,
    PipeTable,
    as_dict,
    evaluate_costs,
    intensity,
    pipe_notes,
    pipe_table,
    roofline_time,
    warm_split,
)
from solar.einsum import EinsumGraph
from solar.hw import HardwareSpec

__all__ = ["compulsory_bytes", "fused_bound", "memory_terms", "program_compute"]


def compulsory_bytes(costs: CostArrays) -> float:
    """Bytes every execution moves through DRAM (inputs/params read, outputs written)."""
    return float(costs.compulsory_read_bytes.sum() + costs.compulsory_written_bytes.sum())


def program_compute(
    table: PipeTable, costs: CostArrays
) -> tuple[dict[str, float], dict[str, float], float]:
    """Whole-program FLOPs and time per pipe, and the busiest pipe's time."""
    flops = np.zeros(len(table.labels))
    if len(table.group_pipe):
        np.add.at(flops, table.group_pipe, costs.group_flops)
    times = flops / table.peaks if len(flops) else flops
    compute = float(times.max()) if len(times) else 0.0
    return as_dict(table.labels, flops), as_dict(table.labels, times), compute


def memory_terms(costs: CostArrays, spec: HardwareSpec, cache: CacheState,
                 extra_dram_bytes: float = 0.0) -> tuple[float, float, float, str]:
    """``(DRAM bytes, L2 bytes, memory time, note)`` of the compulsory traffic."""
    reads = float(costs.compulsory_read_bytes.sum())
    writes = float(costs.compulsory_written_bytes.sum())
    if cache == "cold":
        dram, l2 = reads + writes, 0.0
        note = "cold cache: inputs and parameters are read from DRAM once per distinct element"
    else:
        dram, l2 = warm_split(reads, writes, spec.l2_capacity_bytes)
        note = ("warm cache (Note [Warm cache]): up to the L2 capacity of the program's "
                "data may be on chip at the start; all traffic passes through L2")
    dram += extra_dram_bytes
    l2_bw = spec.l2_bandwidth_bytes_per_s
    memory = max(dram / spec.dram_bandwidth_bytes_per_s, l2 / l2_bw if l2_bw else 0.0)
    return dram, l2, memory, note


def fused_bound(
    graph: EinsumGraph, spec: HardwareSpec, *, precision_policy: PrecisionPolicy = "default",
    sizes: Mapping[str, int] | None = None, cache: CacheState = "warm",
) -> Bound:
    """The fused bound (see the module docstring).

    Raises:
        BoundError: E0452 the spec has no usable peak for some work.
        IRVerifyError: invalid size binding.
    """
    costs = evaluate_costs(graph, sizes)
    table = pipe_table(graph, spec, precision_policy)
    flops, times, compute = program_compute(table, costs)
    dram, l2, memory, cache_note = memory_terms(costs, spec, cache)
    time, bottleneck = roofline_time(compute, memory)
    total = float(sum(flops.values()))
    notes = [
        *pipe_notes(table, graph, precision_policy),
        "fused: the whole program is one kernel with unlimited on-chip memory",
        cache_note,
        "program outputs are written to DRAM once per distinct element",
        "pipes overlap: compute time is the busiest pipe's time",
    ]
    if not costs.exact:
        notes.append("some counts are lower bounds (see docs/bounds.md)")
    return Bound(
        model="fused", device=spec.name, precision_policy=precision_policy,
        sizes=dict(costs.sizes), time_s=time, compute_time_s=compute,
        compute_time_s_by_unit=times, memory_time_s=memory, dram_bytes=dram, l2_bytes=l2,
        flops=total, flops_by_unit=flops, arithmetic_intensity=intensity(total, dram),
        bottleneck=bottleneck, assumptions=tuple(notes), counts_exact=costs.exact,
    )
