"""The fused model: the whole program as one kernel with unlimited on-chip memory.

Contract: ``(CompiledCosts, HardwareSpec) -> Bound``. Only compulsory traffic moves
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
from dataclasses import dataclass

import numpy as np

from solar.bounds.costs import CompiledCosts, CostArrays
from solar.bounds.precision import Pipe, PrecisionPolicy
from solar.bounds.recast import recast_costs
from solar.bounds.roofline import (
    UNITS_NOTE,
    Bound,
    CacheState,
    PipeTable,
    assemble_bound,
    by_pipe,
    memory_time_s,
    pipe_notes,
    pipe_table,
    roofline_time,
    unit_time,
    warm_split,
)
from solar.hw import HardwareSpec

__all__ = [
    "ProgramCompute",
    "compulsory_bytes",
    "compulsory_traffic",
    "fused_bound",
    "program_compute",
]


def compulsory_bytes(costs: CostArrays) -> float:
    """Bytes every execution moves through DRAM (inputs/params read, outputs written)."""
    return float(costs.compulsory_read_bytes.sum() + costs.compulsory_written_bytes.sum())


@dataclass(frozen=True, slots=True)
class ProgramCompute:
    """The whole program's compute on one device.

    Attributes:
        flops_by_pipe: FLOPs per pipe.
        time_s_by_pipe: FLOPs / peak per pipe.
        compute_time_s: the busiest unit's time (`unit_time`: the tensor pipes add).
        flops: all FLOPs.
    """

    flops_by_pipe: dict[Pipe, float]
    time_s_by_pipe: dict[Pipe, float]
    compute_time_s: float
    flops: float


def program_compute(table: PipeTable, costs: CostArrays) -> ProgramCompute:
    """Whole-program FLOPs and time per pipe, and the busiest unit's time."""
    flops = np.zeros(len(table.resolved))
    if len(table.group_pipe):
        np.add.at(flops, table.group_pipe, costs.group_flops)
    times = flops / table.peaks if len(flops) else flops
    flops_by_pipe = by_pipe(table.pipes, flops)
    return ProgramCompute(
        flops_by_pipe=flops_by_pipe,
        time_s_by_pipe=by_pipe(table.pipes, times),
        compute_time_s=float(unit_time(table, times)) if len(times) else 0.0,
        flops=float(sum(flops_by_pipe.values())),
    )


def compulsory_traffic(costs: CostArrays, spec: HardwareSpec,
                       cache: CacheState) -> tuple[float, float, str]:
    """``(DRAM bytes, L2 bytes, assumption)`` of the compulsory traffic."""
    reads = float(costs.compulsory_read_bytes.sum())
    writes = float(costs.compulsory_written_bytes.sum())
    if cache == "cold":
        # Note [L2 pass]: the bytes read from and written to DRAM pass through L2 too.
        return (reads + writes, reads + writes,
                "cold cache: inputs and parameters are read from DRAM once per distinct element")
    dram, l2 = warm_split(reads, writes, spec.l2_capacity_bytes)
    return (dram, l2, "warm cache (Note [Warm cache]): up to the L2 capacity of the program's "
            "data may be on chip at the start; all traffic passes through L2")


def fused_bound(
    compiled: CompiledCosts, spec: HardwareSpec, *, precision_policy: PrecisionPolicy = "default",
    sizes: Mapping[str, int] | None = None, cache: CacheState = "warm",
) -> Bound:
    """The fused bound (see the module docstring).

    Raises:
        BoundError: E0452 the spec has no usable peak for some work.
        IRVerifyError: invalid size binding.
    """
    compiled = recast_costs(compiled, precision_policy)  # Note [Precision what-if bytes]
    costs = compiled.evaluate(sizes)
    table = pipe_table(compiled, spec, precision_policy)
    work = program_compute(table, costs)
    dram, l2, cache_note = compulsory_traffic(costs, spec, cache)
    memory = memory_time_s(spec, dram, l2)
    time, bottleneck = roofline_time(work.compute_time_s, memory)
    notes = [
        *pipe_notes(table, precision_policy),
        "fused: the whole program is one kernel with unlimited on-chip memory",
        cache_note,
        "program outputs are written to DRAM once per distinct element",
        UNITS_NOTE,
    ]
    return assemble_bound(
        "fused", spec, precision_policy, compiled, costs, time_s=time, bottleneck=bottleneck,
        compute_time_s=work.compute_time_s, compute_time_s_by_pipe=work.time_s_by_pipe,
        memory_s=memory, dram_bytes=dram, l2_bytes=l2, flops=work.flops,
        flops_by_pipe=work.flops_by_pipe, notes=notes,
    )
