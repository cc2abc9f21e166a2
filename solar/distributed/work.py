"""Per-rank work of a plan: the single-device kernels divided only where the plan shards.

Contract: ``(kernel bounds, ModelStructure, ParallelPlan, ...) -> RankWork``, pure.
Every kernel's compute time (FLOPs / the peak of its pipe, from the existing bound
models at the program's precision) is divided by the plan's sharding of that kernel:

* tp*cp*pp for the kernels TP shards (every kernel but the replicated ones: Note
  [Replicated work] in `solar.distributed.structure`);
* cp*pp for the replicated ones (norms), or tp*cp*pp under sequence parallelism;
* pp*tp for the optimizer, and also dp under ZeRO stage 1 or more.

Dividing by pp (and by the DP replica count in ZeRO) charges the *average* rank;
the busiest rank does at least the average, so the bound stays a lower bound. Expert
parallelism moves work between ranks without shrinking any rank's average, so ep
divides nothing. A full recompute runs the stack's forward kernels once more.

Compute overlaps across units as in the fused model: each kernel's time on each pipe
is summed over the step, the pipes on the tensor cores add (one matrix unit: Note
[Shared units]) and distinct units overlap (the max; Note [Overlapping units] in
`solar.bounds.roofline`), by the single-device rule `unit_time_of`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from solar.bounds import KernelBound, Pipe, ResolvedPipe, unit_time_of
from solar.distributed.plan import ParallelPlan, Phase, Recompute
from solar.distributed.structure import ModelStructure

__all__ = ["RankWork", "rank_work"]


@dataclass(frozen=True, slots=True)
class RankWork:
    """One rank's compute for one step.

    Attributes:
        compute_s: the busiest unit's time (`unit_time_of` of the per-pipe busy times).
        phases_s: busy time per phase (summed over pipes; for display).
        model_flops: FLOPs of the whole step's forward and backward, all ranks
            (no recompute): the MFU numerator.
        peak_flops_per_s: the peak of the pipe with the most FLOPs (the MFU denominator).
    """

    compute_s: float
    phases_s: Mapping[str, float]
    model_flops: float
    peak_flops_per_s: float


def rank_work(
    kernels: Sequence[KernelBound],
    structure: ModelStructure,
    plan: ParallelPlan,
    *,
    micro_batches: int,
    global_batch: int,
    micro_batch: int,
    recompute: Recompute,
    phase: Phase,
    context: int = 1,
) -> RankWork:
    """The per-rank compute of one step of ``plan`` (module docstring).

    Args:
        kernels: per-kernel bounds of the single-device program (one micro-batch).
        structure: the program's structure.
        plan: the plan.
        micro_batches: micro-batches per rank per step.
        global_batch: samples per step.
        micro_batch: samples per micro-batch.
        recompute: the activation recompute policy.
        phase: what the step is.
        context: for a decode step, the program's tokens per sequence: each forward
            kernel counts ``1 / context`` of its work (Note [Decode step]).

    Returns:
        The rank's work.
    """
    sharded = plan.tp * plan.cp * plan.pp
    replicated = (plan.tp if plan.sp else 1) * plan.cp * plan.pp
    optimizer = plan.tp * plan.pp * (plan.dp if plan.zero >= 1 else 1)
    per_seq = context if phase == "decode" else 1
    by_pipe: dict[ResolvedPipe, float] = {}
    phases: dict[str, float] = {}
    flops_by_pipe: dict[Pipe | None, float] = {}
    peaks: dict[Pipe | None, float] = {}
    model_flops = 0.0
    for k in kernels:
        ph = structure.phase.get(k.name, "forward")
        if phase != "train" and ph != "forward":
            continue
        label = k.pipe
        if ph == "optimizer":
            runs, div = 1.0, optimizer
        else:
            runs = float(micro_batches)
            div = (replicated if k.name in structure.replicated else sharded) * per_seq
            model_flops += k.flops / per_seq
            if recompute == "full" and phase == "train" and k.name in structure.stack_forward:
                runs += micro_batches
                phases["recompute"] = phases.get("recompute", 0.0) + \
                    micro_batches * k.compute_time_s / div
        for rp, t in k.compute_time_s_by_pipe.items():
            by_pipe[rp] = by_pipe.get(rp, 0.0) + runs * t / div
        phases[ph] = phases.get(ph, 0.0) + (float(micro_batches) if ph != "optimizer" else 1.0) \
            * k.compute_time_s / div
        flops_by_pipe[label] = flops_by_pipe.get(label, 0.0) + k.flops
        if k.compute_time_s > 0 and k.flops > 0:
            peaks[label] = k.flops / k.compute_time_s
    main = max(flops_by_pipe, key=lambda p: flops_by_pipe[p], default=None)
    return RankWork(
        compute_s=unit_time_of(by_pipe),
        phases_s=phases,
        model_flops=model_flops * global_batch / micro_batch,
        peak_flops_per_s=peaks.get(main, 0.0) if main is not None else 0.0,
    )
