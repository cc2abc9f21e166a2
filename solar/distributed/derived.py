"""Per-rank programs derived by torch's own tensor parallelism, in place of the analytic
division of the single-device program.

Contract: `derive_rank(path, request, ...) -> DerivedRank | str` captures one
tensor-parallel rank of a PyTorch model file (`solar.frontends.pytorch.
derive_plan_capture`: the TP plan inferred from the module tree or given by the plan
file's ``tp_plan``, applied by ``parallelize_module`` under the fake process group of
``tp`` ranks) and prepares it for the bounds; where it cannot, the reason (the step is
then derived analytically, `solar.distributed.work` and `.plan_collectives`, and the
report says so). `rank_work_of` and `tp_collectives_of` are what `solar.distributed.step`
takes from a derived rank. Pure but for `derive_rank`.

Note [Derived ranks]
~~~~~~~~~~~~~~~~~~~~
The analytic rule divides every kernel of the single-device program by tp but the norms
(Note [Replicated work] in `solar.distributed.structure`). A derived rank runs what
torch's plan runs on one rank: the sharded Linears at 1/tp, and in full whatever the
plan leaves replicated (embeddings, the output head, the loss, norms, attention when the
heads are not split, the optimizer's update of replicated parameters). Its per-rank
FLOPs are therefore the analytic ones plus the replicated work the analytic rule divides
(tests/parallel/test_derived.py checks this), and its TP collectives are the ones
DTensor inserts (each row-parallel output's all-reduce in the forward, each
column-parallel input's in the backward), with their captured buffers. The rank
program's compute, compulsory HBM bytes and TP collectives give a second step bound,
``step.derived_step_s``; the step bound is the lower of it and the analytic division's
(`solar.distributed.step._with_derived`: the derived rank is one framework's
implementation, the analytic division holds for any that shards as much); pipeline (÷
pp: the average stage), context parallelism (÷ cp), data parallelism and ZeRO (the
gradient collectives, the optimizer's ÷ dp), memory, a decode step and the pipeline
schedules' per-stage work (`solar.distributed.pipelining`) stay analytic. Linears that
read one input (separate Q/K/V, gate and up projections) each all-reduce their input
gradient in the backward, as torch runs them; a fused projection reduces once. The
derived bound is that of the plan as torch's tensor parallelism runs it: a framework
that also shards the replicated work (Megatron's vocabulary-parallel embedding and loss)
does less, so the analytic rule (which shards all of it) stays in the step bound, and
plans with sequence parallelism (whose norm and residual sharding torch's
``SequenceParallel`` needs model-specific input layouts for) stay analytic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from solar.bounds import compile_costs, compute_bounds
from solar.bounds.precision import PrecisionPolicy
from solar.distributed.collectives import Collective
from solar.distributed.plan import ParallelPlan, Phase, PlanFile, Recompute
from solar.distributed.structure import infer_structure
from solar.distributed.work import RankWork, rank_work
from solar.hw.spec import HardwareSpec
from solar.ir import Program
from solar.ir import collectives as ir_collectives
from solar.training import phase_of_kernel

if TYPE_CHECKING:
    from solar.einsum import EinsumGraph

__all__ = [
    "DerivedRank",
    "RankDeriver",
    "analytic_note",
    "derive_for",
    "derive_rank",
    "rank_work_of",
    "tp_collectives_of",
]

class RequestLike(Protocol):
    """What a derivation reads of a `solar.distributed.step.DistributedRequest` (named
    structurally: the step imports this module)."""

    @property
    def plan(self) -> ParallelPlan | None: ...
    @property
    def phase(self) -> Phase: ...
    @property
    def plan_file(self) -> PlanFile | None: ...


Prepare = Callable[[Any, Program], Program]
"""What makes a captured rank's program the one the bounds see (the frontend result and
its program in, `solar.pipeline.prepare.bounds_program`'s program out)."""


@dataclass(frozen=True, slots=True)
class DerivedRank:
    """One tensor-parallel rank as torch's plan runs it.

    Attributes:
        label: the plan, in words (``ColwiseParallel: layers.*.qkv, ...``).
        source: ``inferred`` or ``plan file``.
        tp: the ranks the plan shards over.
        program: the rank's bounds program (world size ``tp`` declared).
        graph: its lifted graph.
        sizes: its size binding.
        phase_of: each kernel's phase.
    """

    label: str
    source: str
    tp: int
    program: Program
    graph: EinsumGraph
    sizes: Mapping[str, int]
    phase_of: Callable[[str], str]

    def note(self) -> str:
        """The report's words for where each rank's program came from."""
        return (f"TP rank derived by torch's tensor parallelism ({self.source} "
                f"plan: {self.label}) on rank 0 of {self.tp} under the fake process group: "
                "its step bound is step.derived_step_s (Note [Derived ranks])")


def analytic_note(reason: str) -> str:
    """The report's words for an analytically derived rank and why."""
    return f"per-rank program: analytic (the single-device program divided by the plan): {reason}"


def derive_rank(
    path: Path,
    request: RequestLike,
    *,
    overrides: Mapping[str, int],
    train: bool,
    optimizer: str = "auto",
    prepare: Prepare,
) -> DerivedRank | str:
    """Derive one TP rank of the model file ``path`` for ``request`` (module docstring);
    the reason (for the report) where none is derived. ``prepare`` makes the captured
    rank the program the bounds see (the pipeline's `bounds_program`, passed in: this
    layer does not import the pipeline).

    Raises:
        PlanError: E0805 a ``tp_plan`` path that names no Linear of the model.
        FrontendError: the model cannot be loaded (as the single-device capture).
    """
    from solar.einsum import lift_to_einsum
    from solar.frontends.pytorch.derive_plan_capture import capture_tp_rank
    from solar.frontends.pytorch.train_step import OptimizerSpec, TrainStep
    from solar.ir import resolve_sizes, verify_program

    plan = request.plan
    if plan is None or plan.tp < 2:
        return "the plan has no tensor parallelism"
    if request.phase == "decode":
        return "a decode step (one token per sequence) is derived analytically"
    if plan.sp:
        return "sequence parallelism is derived analytically (Note [Derived ranks])"
    patterns = dict(request.plan_file.tp_plan) if request.plan_file is not None else {}
    step = None
    if train:
        wd = 1e-2 if optimizer == "adamw" else 0.0
        step = TrainStep() if optimizer == "auto" else TrainStep(
            OptimizerSpec(optimizer, weight_decay=wd))  # type: ignore[arg-type]
    derived = capture_tp_rank(path, tp=plan.tp, overrides=overrides, step=step,
                              patterns=patterns or None, where="plan file")
    if derived.front is None:
        return f"no tensor-parallel plan applies: {derived.reason}"
    program = derived.front.program
    verify_program(program)
    sizes = resolve_sizes(program, {})
    bounds = prepare(derived.front, program)
    phase_of: Callable[[str], str] = phase_of_kernel if train else _forward
    return DerivedRank(derived.plan.label(), derived.plan.source, plan.tp, bounds,
                       lift_to_einsum(bounds), sizes, phase_of)


def _forward(_name: str) -> str:
    return "forward"


def rank_work_of(
    d: DerivedRank, analytic: RankWork, plan: ParallelPlan, spec: HardwareSpec, *,
    precision: PrecisionPolicy, micro_batches: int, global_batch: int, micro_batch: int,
    recompute: Recompute, phase: Phase,
) -> tuple[RankWork, float]:
    """The derived rank's compute (Note [Derived ranks]) and its compulsory HBM bytes
    per micro-batch, divided by what stays analytic (pp, cp, ZeRO's dp). The MFU
    figures (model FLOPs, peak) stay the analytic ones: they count the model, not a rank."""
    compiled = compile_costs(d.graph)
    unfused = compute_bounds(compiled, spec, model="unfused", precision_policy=precision,
                             sizes=d.sizes, cache="cold")
    fused = compute_bounds(compiled, spec, model="fused", precision_policy=precision,
                           sizes=d.sizes, cache="cold")
    s = infer_structure(d.program, d.sizes, d.phase_of)
    work = rank_work(unfused.kernels, dataclasses.replace(s, replicated=frozenset()),
                     dataclasses.replace(plan, tp=1), micro_batches=micro_batches,
                     global_batch=global_batch, micro_batch=micro_batch,
                     recompute=recompute, phase=phase)
    return (RankWork(work.compute_s, work.phases_s, analytic.model_flops,
                     analytic.peak_flops_per_s), fused.dram_bytes / (plan.pp * plan.cp))


def tp_collectives_of(
    d: DerivedRank, plan: ParallelPlan, *, micro_batches: int, recompute: Recompute,
    phase: Phase,
) -> list[Collective]:
    """The derived rank's collectives per step (Note [Derived ranks]): each captured one
    ``micro_batches / pp`` times (the average stage's share), a stack's forward ones once
    more under a full recompute; identical ones merged into one row."""
    stack = infer_structure(d.program, d.sizes, d.phase_of).stack
    rows: dict[tuple[str, int, float, str, str], float] = {}
    for info in ir_collectives(d.program, d.sizes):
        ph = d.phase_of(info.kernel)
        if phase != "train" and ph != "forward":
            continue
        count = micro_batches / plan.pp
        if (recompute == "full" and phase == "train" and ph == "forward" and stack
                and info.kernel.startswith(f"{stack}_")):
            count *= 2
        op = "send_recv" if info.kind == "permute" else info.kind
        key = (op, info.group_size, float(info.buffer_bytes), str(info.dtype), ph)
        rows[key] = rows.get(key, 0.0) + count
    return [Collective(op, n, nbytes, dtype, "tp", ph, count,  # type: ignore[arg-type]
                       "as torch's tensor parallelism runs it (derived rank)")
            for (op, n, nbytes, dtype, ph), count in rows.items()]


class RankDeriver:
    """`derive_for` deferred: `solar.distributed.step` calls it once the plan is checked
    (a bad plan fails before any capture); ``note`` is then the report's words."""

    def __init__(self, path: Path | None, request: RequestLike, *, frontend: str,
                 sizes: Mapping[str, int], train: bool, optimizer: str,
                 prepare: Prepare) -> None:
        self.args = (path, request)
        self.options = {"frontend": frontend, "sizes": sizes, "train": train,
                        "optimizer": optimizer, "prepare": prepare}
        self.note: str | None = None

    def __call__(self) -> DerivedRank | None:
        derived, self.note = derive_for(*self.args, **self.options)  # type: ignore[arg-type]
        return derived


def derive_for(
    path: Path | None, request: RequestLike, *, frontend: str,
    sizes: Mapping[str, int], train: bool, optimizer: str, prepare: Prepare,
) -> tuple[DerivedRank | None, str | None]:
    """The derived rank for an analysis of ``path`` (a PyTorch model file) and the
    report's note on where each rank's program came from; ``(None, None)`` for a program
    that is already distributed (its own ranks are bounded).

    Raises:
        PlanError: E0805 a ``tp_plan`` path that names no Linear of the model.
    """
    if request.plan is None:
        return None, None
    if path is None or frontend != "torch" or path.suffix != ".py":
        return None, analytic_note("only a PyTorch model file's ranks are derived")
    derived = derive_rank(path, request, overrides=sizes, train=train, optimizer=optimizer,
                          prepare=prepare)
    if isinstance(derived, str):
        return None, analytic_note(derived)
    return derived, derived.note()
