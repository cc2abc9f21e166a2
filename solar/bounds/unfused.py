"""The unfused model: every kernel is its own launch, and the times add up.

Contract: ``(CompiledCosts, HardwareSpec) -> Bound`` with a per-kernel breakdown.
Per kernel k: ``t_k >= max(busiest unit's time, DRAM bytes / DRAM bw, L2 bytes / L2 bw)``
(a unit's time: its pipes' FLOPs / peak, the tensor pipes added, Note [Shared units]);
the bound is ``sum_k t_k`` (launches are sequential), and never below the fused bound
(which bounds every execution).

Which bytes hit DRAM (Note [L2 residency], docs/bounds.md "Byte rules"): a kernel
moves the distinct program-level elements it reads and writes (kernel-local
tensors never leave the chip). Under the cold-cache assumption an input's first
touch comes from DRAM: kernel k must fetch at least ``|R_k| - min(|T|, sum of
earlier reads of T)`` new bytes of it. Every other read ("warm": data an earlier
kernel produced or touched) and every write except an output's final write may
be served by L2, but L2 holds at most C bytes: at a kernel's start at most C
bytes of warm data are on chip, and at its end at most C bytes of its writes,
so at least ``warm reads - C`` and ``warm writes - C`` bytes go through DRAM. The
rest is served by L2 (`KernelBound.l2_bytes`), and the L2 term counts every byte the
kernel moves, DRAM bytes included (Note [L2 pass]; free when the spec has no L2
bandwidth); C unknown means unlimited, under either cache state. An output's last
writer writes it to DRAM, and so does the last writer of a temp that an output views
(an alias kernel's output has no storage of its own; Note [Alias kernels]).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from solar.bounds.costs import CompiledCosts, CostArrays
from solar.bounds.fused import fused_bound
from solar.bounds.precision import PrecisionPolicy
from solar.bounds.recast import recast_costs
from solar.bounds.roofline import (
    Bound,
    CacheState,
    KernelBreakdown,
    assemble_bound,
    by_pipe,
    memory_time_s,
    pipe_flops,
    pipe_notes,
    pipe_table,
    roofline_time,
    unit_time,
)
from solar.hw import HardwareSpec

__all__ = ["KernelTraffic", "kernel_traffic", "unfused_bound"]


@dataclass(frozen=True, slots=True, eq=False)
class KernelTraffic:
    """Per-kernel byte classes of the unfused model (arrays indexed by kernel)."""

    cold: np.ndarray
    final_writes: np.ndarray
    warm_reads: np.ndarray
    warm_writes: np.ndarray

    def split(self, l2_capacity_bytes: float) -> tuple[np.ndarray, np.ndarray]:
        """``(DRAM bytes, bytes served by L2)`` per kernel for an L2 of capacity C.

        The two are disjoint and sum to all the bytes a kernel moves; its L2 term
        counts both (Note [L2 pass] in `solar.bounds.roofline`).
        """
        c = l2_capacity_bytes
        over_r = np.maximum(0.0, self.warm_reads - c)
        over_w = np.maximum(0.0, self.warm_writes - c)
        dram = self.cold + self.final_writes + over_r + over_w
        l2 = (self.warm_reads - over_r) + (self.warm_writes - over_w)
        return dram, l2


def kernel_traffic(compiled: CompiledCosts, costs: CostArrays, *,
                   cache: CacheState = "cold") -> KernelTraffic:
    """Classify every kernel's bytes as cold, final output, warm read or warm write.

    With a warm cache (Note [Warm cache]) every byte is warm: a repeated program may
    find any of its data in L2, up to the capacity.
    """
    lay = compiled.layout
    nk = len(compiled.graph.kernels)
    r, w = costs.read_bytes, costs.written_bytes

    def per_kernel(x: np.ndarray) -> np.ndarray:
        return np.bincount(lay.kernel, weights=x, minlength=nk) if len(x) else np.zeros(nk)

    if cache == "warm":
        zero = np.zeros(nk)
        return KernelTraffic(zero, zero, per_kernel(r), per_kernel(w))
    share = np.zeros_like(r)
    if len(lay.input_order):
        rs = r[lay.input_order]
        excl = np.cumsum(rs) - rs
        prior = excl - excl[lay.input_group_start]
        size = costs.tensor_bytes[lay.input_tensor_index]
        share[lay.input_order] = np.maximum(0.0, rs - np.minimum(size, prior))
    # An output's storage may be a temp the output views: its last writer writes it back.
    final = np.where(lay.final_write,
                     np.minimum(w, costs.compulsory_written_bytes[lay.final_tensor_index]), 0.0)
    return KernelTraffic(per_kernel(share), per_kernel(final), per_kernel(r - share),
                         per_kernel(w - final))


def unfused_bound(
    compiled: CompiledCosts, spec: HardwareSpec, *, precision_policy: PrecisionPolicy = "default",
    sizes: Mapping[str, int] | None = None, cache: CacheState = "warm",
    fused: Bound | None = None,
) -> Bound:
    """The unfused bound (see the module docstring).

    Args:
        compiled: the program's compiled costs.
        spec: the device.
        precision_policy: see `solar.bounds.precision`.
        sizes: free-size overrides.
        cache: ``warm`` or ``cold``.
        fused: the fused bound at the same spec, policy, sizes and cache, when the
            caller has it (the floor of this bound); computed otherwise.

    Raises:
        BoundError: E0452 the spec has no usable peak for some work.
        IRVerifyError: invalid size binding.
        ValueError: ``fused`` is not a fused bound of this device, policy and binding.
    """
    compiled = recast_costs(compiled, precision_policy)  # Note [Precision what-if bytes]
    costs = compiled.evaluate(sizes)
    if fused is None:
        fused = fused_bound(compiled, spec, precision_policy=precision_policy, sizes=sizes,
                            cache=cache)
    elif (fused.model, fused.device, fused.precision_policy, dict(fused.sizes)) != (
            "fused", spec.name, precision_policy, dict(costs.sizes)):
        raise ValueError("`fused` must be the fused bound of the same device, policy and sizes")
    table = pipe_table(compiled, spec, precision_policy)
    pipes_charged = table.pipes
    nk = len(compiled.graph.kernels)
    pf = pipe_flops(table, costs, nk)
    ptime = pf / table.peaks if pf.shape[1] else pf
    compute = unit_time(table, ptime) if pf.shape[1] else np.zeros(nk)
    busiest = ptime.argmax(axis=1) if pf.shape[1] else np.zeros(nk, dtype=np.int64)
    cap = spec.l2_capacity_bytes
    # An unknown L2 capacity means unlimited reuse, under both cache states (Note [L2 pass]).
    dram, l2 = kernel_traffic(compiled, costs, cache=cache).split(
        math.inf if cap is None else float(cap))
    # Note [L2 pass]: the bytes from DRAM pass through L2 too
    memory = memory_time_s(spec, dram, dram + l2)
    kflops = pf.sum(axis=1)
    pipes = [table.resolved[b].requested if pf.shape[1] and f > 0 else None
             for b, f in zip(busiest.tolist(), kflops.tolist(), strict=True)]
    kernels = KernelBreakdown(
        tuple(k.name for k in compiled.graph.kernels),
        tuple(k.unit for k in compiled.graph.kernels),
        (kflops.tolist(), dram.tolist(), l2.tolist(), compute.tolist(), memory.tolist()),
        pipes, (table.resolved, ptime),
    )
    total_time = float(np.maximum(compute, memory).sum())
    compute_s, memory_s = float(compute.sum()), float(memory.sum())
    dram_b, flops = float(dram.sum()), float(kflops.sum())
    notes = [
        *pipe_notes(table, precision_policy),
        "unfused: each kernel is a separate launch; the bound sums per-kernel "
        "max(busiest unit, DRAM bytes / DRAM bw, L2 bytes / L2 bw)",
        *(["cold cache: each input/parameter element is first read from DRAM",
            "program outputs are written to DRAM by their last writer"] if cache == "cold" else
          ["warm cache (Note [Warm cache]): any data may be L2-resident at a kernel's start, "
           "up to the L2 capacity"]),
        "re-used data (temps, re-read inputs) may be L2-resident: at most "
        + ("unlimited (L2 capacity unknown)" if cap is None else f"{float(cap):.4g} B")
        + " per kernel served from L2, for reads and for writes",
    ]
    if spec.l2_bandwidth_bytes_per_s is None:
        notes.append("L2 bandwidth unknown: L2 traffic is free")
    # The time is the sum of per-kernel times; the bottleneck, the larger summed term.
    time = total_time
    _, bottleneck = roofline_time(compute_s, memory_s)
    if dram_b < fused.dram_bytes:
        notes.append("DRAM bytes below the fused model's: each kernel's share is a per-kernel "
                     "guarantee (it may start with the L2 full of its inputs and end with it "
                     "full of its writes), weaker in sum than the whole-program guarantee; "
                     "every execution moves at least the fused DRAM bytes")
    if fused.time_s > total_time:
        time, bottleneck = fused.time_s, fused.bottleneck
        notes.append("raised to the fused bound, which bounds every execution")
    return assemble_bound(
        "unfused", spec, precision_policy, compiled, costs, time_s=time, bottleneck=bottleneck,
        compute_time_s=compute_s, compute_time_s_by_pipe=by_pipe(pipes_charged, ptime.sum(axis=0)),
        memory_s=memory_s, dram_bytes=dram_b, l2_bytes=float(l2.sum()), flops=flops,
        flops_by_pipe=by_pipe(pipes_charged, pf.sum(axis=0)), notes=notes, kernels=kernels,
    )
