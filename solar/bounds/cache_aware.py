"""The cache-aware model: fused, plus DRAM traffic that the chip's capacity forces.

Contract: ``(CompiledCosts, HardwareSpec) -> Bound``. Like `fused`, but the on-chip
memory holds S = `HardwareSpec.onchip_capacity_bytes` (registers + shared memory
+ L2; unknown => unlimited). Traffic is added only where a theorem proves it
(docs/bounds.md, "Cache-aware"):

* matmul-like contractions ``C[I,J] += A[I,K] * B[K,J]`` (batch indices allowed)
  whose A and B are program inputs/parameters and whose C is a program output:
  the red-blue pebble bound of Smith, Lowery, Langou and van de Geijn (2019),
  ``Q >= 2|V|/sqrt(S) - 2S`` words, less |C| because C starts on chip here;
* global reductions over an input that a later statement re-reads element-wise
  (a softmax row, a batch-norm channel): each group larger than S must be re-read,
  at least ``group bytes - S`` per group.

Per-contraction bounds are not additive with the compulsory traffic, so the model
charges ``max(compulsory + forced re-reads, max over contractions of Q)`` bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from solar.bounds.costs import CompiledCosts, CostArrays
from solar.bounds.fused import compulsory_traffic, program_compute
from solar.bounds.precision import PrecisionPolicy
from solar.bounds.recast import recast_costs
from solar.bounds.roofline import (
    UNITS_NOTE,
    Bound,
    CacheState,
    assemble_bound,
    memory_time_s,
    pipe_notes,
    pipe_table,
    roofline_time,
)
from solar.einsum import EinsumGraph
from solar.hw import HardwareSpec

__all__ = ["cache_aware_bound", "pebble_bytes", "spill_bytes"]


def pebble_bytes(points: float, output_elems: float, itemsize: int, capacity_bytes: float) -> float:
    """Matmul I/O lower bound in bytes (Smith et al. 2019, less the output's loads).

    ``points`` multiply-adds, fast memory of ``capacity_bytes``; words are elements of
    the smallest operand itemsize (the weakest, hence safe, choice).

    >>> pebble_bytes(4096.0**3, 4096.0**2, 4, 4 * 16 * 1024.0**2)  # S = 16 Mi words
    0.0
    >>> pebble_bytes(4096.0**3, 4096.0**2, 4, 4 * 1024.0**2)  # (2**37/1024 - 2**21 - 2**24) * 4
    461373440.0
    """
    if math.isinf(capacity_bytes) or points <= 0:
        return 0.0
    s = capacity_bytes / itemsize
    words = 2.0 * points / math.sqrt(s) - 2.0 * s - output_elems
    return max(0.0, words) * itemsize


def spill_bytes(groups: float, group_elems: float, itemsize: int, capacity_bytes: float) -> float:
    """Forced re-reads of a reduced input: ``groups * max(0, group bytes - S)``.

    >>> spill_bytes(4.0, 1e6, 4, 1e6)
    12000000.0
    """
    if math.isinf(capacity_bytes):
        return 0.0
    return groups * max(0.0, group_elems * itemsize - capacity_bytes)


def _forced(
    graph: EinsumGraph, costs: CostArrays, s_bytes: float
) -> tuple[float, float, list[str]]:
    notes: list[str] = []
    spills = 0.0
    for i, sp in enumerate(graph.spills):
        b = spill_bytes(float(costs.spill_groups[i]), float(costs.spill_group_elems[i]),
                        sp.itemsize_bytes, s_bytes)
        if b > 0:
            notes.append(f"reduction barrier on `{sp.tensor}` forces {b:.4g} B of re-reads")
        spills += b
    pebble = 0.0
    for i, c in enumerate(graph.contractions):
        if not c.eligible:
            continue
        q = pebble_bytes(float(costs.contraction_points[i]),
                         float(costs.contraction_output_elems[i]), c.itemsize_bytes, s_bytes)
        if q > 0:
            lhs, rhs, out = c.operands
            notes.append(f"matmul I/O bound for {out} = {lhs} x {rhs} in `{c.kernel}`: {q:.4g} B")
        pebble = max(pebble, q)
    return spills, pebble, notes


def cache_aware_bound(
    compiled: CompiledCosts, spec: HardwareSpec, *, precision_policy: PrecisionPolicy = "default",
    sizes: Mapping[str, int] | None = None, cache: CacheState = "warm",
) -> Bound:
    """The cache-aware bound (see the module docstring).

    Raises:
        BoundError: E0452 the spec has no usable peak for some work.
        IRVerifyError: invalid size binding.
    """
    compiled = recast_costs(compiled, precision_policy)  # Note [Precision what-if bytes]
    costs = compiled.evaluate(sizes)
    table = pipe_table(compiled, spec, precision_policy)
    work = program_compute(table, costs)
    cap = spec.onchip_capacity_bytes
    s_bytes = math.inf if cap is None else float(cap)
    spills, pebble, forced_notes = _forced(compiled.graph, costs, s_bytes)
    base, l2, cache_note = compulsory_traffic(costs, spec, "cold")
    dram = max(base + spills, pebble)
    if cache == "warm":
        # One credit of C for everything a repetition moves (Note [Warm cache]): the
        # bytes cached at the boundary of two repetitions save at most one transfer each,
        # whether of compulsory traffic, re-reads or pebble-game traffic.
        cap_l2 = spec.l2_capacity_bytes
        dram = 0.0 if cap_l2 is None else max(0.0, dram - float(cap_l2))
        _, _, cache_note = compulsory_traffic(costs, spec, cache)
    memory = memory_time_s(spec, dram, l2)
    time, bottleneck = roofline_time(work.compute_time_s, memory)
    notes = [
        *pipe_notes(table, precision_policy),
        "cache-aware: one kernel whose on-chip memory is "
        + ("unlimited (capacity unknown)" if cap is None else f"{s_bytes:.4g} B "
           "(registers + shared memory + L2)"),
        cache_note,
        "extra traffic only where proven: matmul pebble bound (Smith et al. 2019), "
        "reduction barriers; combined as max(compulsory + re-reads, pebble bounds)",
        UNITS_NOTE,
        *forced_notes,
    ]
    return assemble_bound(
        "cache-aware", spec, precision_policy, compiled, costs, time_s=time,
        bottleneck=bottleneck, compute_time_s=work.compute_time_s,
        compute_time_s_by_pipe=work.time_s_by_pipe, memory_s=memory, dram_bytes=dram,
        l2_bytes=l2, flops=work.flops, flops_by_pipe=work.flops_by_pipe, notes=notes,
    )
