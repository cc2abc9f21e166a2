"""The step bound of a parallel plan on a cluster: max over ranks and resources.

Contract: ``(Program, EinsumGraph, sizes, DistributedRequest) -> DistributedInfo``.
Each rank has these resources, which overlap perfectly with each other and never
with themselves (docs/distributed.md, Note [Resources]):

* compute: its kernels' FLOPs over the peaks (`solar.distributed.work`);
* hbm: the step's compulsory DRAM traffic (the fused model's bytes) divided by the
  plan's sharding, plus each further micro-batch's inputs;
* injection and scale-out: the collectives' minimum bytes over the links
  (`solar.distributed.collectives`).

The step bound is the max over pipeline stages and resources. Per-hop latency and
pipeline fill are zero in the bound (the alpha-aware figure beside it is labelled an
estimate). Memory is checked first: a plan whose per-rank lower estimate exceeds the
device memory is reported infeasible with ``step.time_s`` null.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from solar.bounds import compile_costs, compute_bounds
from solar.bounds.precision import PrecisionPolicy
from solar.diagnostics import PlanError
from solar.distributed.collectives import (
    Collective,
    CollectiveOp,
    GroupPlacement,
    alpha_estimate_s,
    charge_collective,
    min_bytes_per_rank,
    place_groups,
)
from solar.distributed.decode import DecodeStep, decode_step
from solar.distributed.failures import Failure
from solar.distributed.moe_step import moe_info, raise_step, with_moe
from solar.distributed.pipelining import PipelineReport, pipeline_report
from solar.distributed.plan import ParallelPlan, Phase, PlanFile, Recompute, check_plan
from solar.distributed.plan_collectives import plan_collectives
from solar.distributed.structure import ModelStructure, infer_structure
from solar.distributed.work import RankWork, rank_work
from solar.einsum import EinsumGraph
from solar.hw.cluster import ClusterSpec
from solar.hw.cluster_loader import cluster_device, load_cluster_spec
from solar.hw.spec import HardwareSpec
from solar.ir import Name, Program, TensorDecl, eval_int
from solar.ir import collectives as ir_collectives
from solar.report.distributed import (
    CollectiveRow,
    DistributedInfo,
    MemoryRow,
    PlanInfo,
    RankRow,
    StepRow,
    StructureInfo,
)

__all__ = ["DistributedRequest", "bound_prepared", "bound_step"]

MAX_RANK_ROWS: Final = 16
"""Pipeline stages listed in ``ranks``; deeper pipelines list the first, the binding
and the last ones (every stage is bounded)."""


@dataclass(frozen=True, slots=True)
class DistributedRequest:
    """What ``--cluster``/``--parallel`` ask for.

    Attributes:
        cluster: a bundled cluster name or a cluster YAML path.
        plan: the plan; ``None`` for a program that is already distributed (its
            captured collectives are bounded as they are).
        micro_batch: samples per micro-batch (the program's own batch).
        global_batch: samples per step, all replicas.
        recompute: activation recompute policy.
        phase: train (one optimizer step) or prefill/decode (one forward).
        plan_file: the plan file's model facts, if one was given.
        schedules: pipeline schedules to bound (``all`` for every one); empty: the
            plan's own (1f1b, or interleaved with vpp > 1).
        failures: data-parallel replicas down per stage (``--fail``).
        moe_load: tokens per expert (``--moe-load``: a file, ``uniform``, ``zipf:A``).
        moe_slots: expert slots per GPU for adaptive placement (``--moe-slots``).
    """

    cluster: str
    plan: ParallelPlan | None
    micro_batch: int
    global_batch: int
    recompute: Recompute = "none"
    phase: Phase = "train"
    plan_file: PlanFile | None = field(default=None)
    schedules: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()
    moe_load: str | None = None
    moe_slots: int | None = None


def _structure_info(s: ModelStructure) -> StructureInfo:
    return StructureInfo(layers=s.layers, stack=s.stack, hidden=s.hidden, heads=s.heads,
                         tokens_per_micro_batch=s.tokens, tp_all_reduces_per_layer=s.sub_blocks,
                         moe=s.moe, replicated_kernels=len(s.replicated))


def _memory(s: ModelStructure, plan: ParallelPlan, req: DistributedRequest,
            spec: HardwareSpec, micro_batches: int,
            decode: DecodeStep | None = None) -> MemoryRow:
    shard = plan.tp * plan.pp
    dense, expert = s.param_bytes - s.expert_param_bytes, s.expert_param_bytes
    params = dense / shard + expert / (shard * plan.ep)
    train = req.phase == "train"
    grads = params if train else 0.0
    state = s.optimizer_bytes / shard if train else 0.0
    if plan.zero >= 1:
        state /= plan.dp
    if plan.zero >= 2:
        grads /= plan.dp
    if plan.zero >= 3:
        params /= plan.dp
    per_layer_input = s.tokens / plan.cp * (s.hidden or 0) * s.act_bytes
    if decode is not None:  # the KV caches stay (Note [Decode step])
        acts = decode.cache_bytes(plan, micro_batches)
    elif not train:
        acts = 0.0
    elif req.recompute == "none":
        acts = s.saved_activation_bytes / (plan.tp * plan.pp * plan.cp)
    else:  # only the stack's layer inputs stay (Note [Recompute memory])
        acts = per_layer_input * s.layers / (plan.pp * (plan.tp if plan.sp else 1))
    in_flight = min(micro_batches, plan.pp) if train else 1
    total = params + grads + state + acts
    return MemoryRow(
        parameter_bytes=params, gradient_bytes=grads, optimizer_state_bytes=state,
        activation_bytes=acts, collective_buffer_bytes=0.0, total_bytes=total,
        capacity_bytes=spec.dram_capacity_bytes, feasible=total <= spec.dram_capacity_bytes,
        activation_estimate_bytes=acts * in_flight,
    )


def bound_step(
    program: Program,
    graph: EinsumGraph,
    sizes: Mapping[str, int],
    request: DistributedRequest,
    *,
    phase_of: Callable[[str], str],
    precision: PrecisionPolicy,
    size_constants: Mapping[str, int] | None = None,
) -> DistributedInfo:
    """Bound one step of ``request.plan`` for a single-device program.

    Raises:
        HardwareSpecError: unknown or invalid cluster (E0405, E0406).
        PlanError: a plan that cannot run (E0801-E0803).
    """
    cluster = load_cluster_spec(request.cluster)
    spec = cluster_device(cluster)
    pf = request.plan_file
    s = infer_structure(
        program, sizes, phase_of, size_constants=size_constants,
        heads=pf.heads if pf else None, stack_hint=pf.layers if pf else None,
        replicated_paths=pf.replicated if pf else (),
    )
    captured = _captured(program, sizes, cluster, phase_of)
    plan, world, m = _plan_world_batches(request, captured, cluster, s)
    # a captured program's collectives are its own: its decode step is the program
    dec = decode_step(s) if request.phase == "decode" and request.plan is not None else None
    compiled = compile_costs(graph)
    unfused = compute_bounds(compiled, spec, model="unfused", precision_policy=precision,
                             sizes=sizes, cache="cold")
    fused = compute_bounds(compiled, spec, model="fused", precision_policy=precision,
                           sizes=sizes, cache="cold")
    work = rank_work(unfused.kernels, s, plan, micro_batches=m,
                     global_batch=request.global_batch, micro_batch=request.micro_batch,
                     recompute=request.recompute, phase=request.phase,
                     context=dec.context if dec is not None else 1)
    inputs = sum(_bytes(d, sizes) for d in program.tensors if d.role == "input")
    hbm_bytes = fused.dram_bytes / (plan.tp * plan.pp * plan.cp) + \
        (m - 1) * inputs / (plan.pp * plan.cp)
    if dec is not None and dec.context > 1:
        hbm_bytes = dec.hbm_bytes(s, plan, m)
    hbm_s = hbm_bytes / spec.dram_bandwidth_bytes_per_s
    memory = _memory(s, plan, request, spec, m, dec)
    if dec is not None:
        s = dec.structure  # one token per sequence from here: the per-token collectives

    def collectives_of(stage: int) -> tuple[list[Placed], tuple[str, ...]]:
        if captured is not None:
            return captured[1], ("the captured program's collectives, as one rank runs them",)
        colls, notes = plan_collectives(s, plan, stage=stage, micro_batches=m,
                                        recompute=request.recompute, phase=request.phase)
        return [(c, _stride(plan, c.axis)) for c in colls], notes

    info = _assemble(cluster, spec, plan, world, request, s, work, hbm_s, memory,
                     collectives_of)
    if dec is not None:
        info = info.model_copy(update={"assumptions": (*info.assumptions, _decode_note(dec))})
    if request.moe_load is not None:
        info = with_moe(info, moe_info(
            program, s, plan, cluster, peak_flops_per_s=work.peak_flops_per_s,
            moe_load=request.moe_load, slots=request.moe_slots, micro_batches=m), plan.pp)
    if request.plan is None or request.phase != "train" or plan.pp < 2:
        if request.failures or request.schedules:
            raise PlanError("--schedule and --fail bound a pipelined training step: give "
                            "--train and a plan with pp >= 2", code="E0806")
        return info
    pipe = pipeline_report(program, unfused.kernels, s, plan, sizes, cluster,
                           micro_batches=m, recompute=request.recompute,
                           schedules=request.schedules, failures=request.failures)
    return _with_pipeline(info, pipe)


def _plan_world_batches(request: DistributedRequest, captured: tuple[int, list[Placed]] | None,
                        cluster: ClusterSpec, s: ModelStructure,
                        ) -> tuple[ParallelPlan, int, int]:
    """The plan, the world size and the micro-batches per rank; a captured program's
    world checked against the cluster, a plan by `check_plan`."""
    if request.plan is None:
        if captured is None:
            raise PlanError("--cluster without --parallel needs a distributed program "
                            "(one with a world size); give --parallel or --plan", code="E0806")
        world = captured[0]
        if cluster.max_gpus is not None and world > cluster.max_gpus:
            raise PlanError(f"the program's world of {world} ranks exceeds cluster "
                            f"{cluster.name}'s {cluster.max_gpus} GPUs", code="E0803")
        return ParallelPlan(), world, 1
    if captured is not None:
        raise PlanError("the program is already distributed (world size "
                        f"{captured[0]}): drop --parallel/--plan", code="E0806")
    plan = request.plan
    m = check_plan(plan, max_gpus=cluster.max_gpus, cluster=cluster.name,
                   micro_batch=request.micro_batch, global_batch=request.global_batch,
                   heads=s.heads, layers=s.layers if s.stack else None)
    return plan, plan.world, m


def _decode_note(dec: DecodeStep) -> str:
    if dec.context == 1:
        return "decode: the program is taken as one decode step (one token per sequence)"
    cache = ("the KV cache read once" if dec.kv_cache_bytes else
             "no KV cache charged (no attention K/V width was recognised)")
    return (f"decode: one new token per sequence after a KV cache of {dec.context} tokens, "
            f"derived from the {dec.context}-token forward (each kernel's work / "
            f"{dec.context}; parameters and {cache}; collectives per token; "
            "Note [Decode step])")


def _with_pipeline(info: DistributedInfo, pipe: PipelineReport) -> DistributedInfo:
    """Add the pipeline section; the schedule-free bound raises the step bound where it
    is higher (Note [Schedule-free bounds] in `solar.distributed.schedules`)."""
    step = info.step
    assumptions = (*("per-hop latency is zero in the bound; pipeline fill and drain are in "
                     "it (schedule-free)" if a.startswith("per-hop latency and pipeline")
                     else a for a in info.assumptions),
                   "pipeline ranks run their F/B/W operations one at a time (one compute "
                   "stream); chunks of a rank are equal shares of its layers", *pipe.skipped)
    step = raise_step(step, pipe.bound_s, pipe.binding)
    return info.model_copy(update={"step": step, "schedule": pipe.info, "stages": pipe.stages,
                                   "failures": pipe.failures, "assumptions": assumptions})


Placed: TypeAlias = tuple[Collective, "int | GroupPlacement"]
"""A collective and where its group sits: a stride (plans) or a placement (captured)."""


def _captured(
    program: Program, sizes: Mapping[str, int], cluster: ClusterSpec,
    phase_of: Callable[[str], str],
) -> tuple[int, list[Placed]] | None:
    """A distributed program's world size and its collectives (`solar.ir.collectives`)."""
    if program.world is None:
        return None
    out: list[Placed] = []
    for info in ir_collectives(program, sizes):
        op: CollectiveOp = "send_recv" if info.kind == "permute" else info.kind
        n = 2 if info.kind == "permute" else info.group_size
        size = info.source_bytes if info.kind == "permute" else info.buffer_bytes
        groups = info.pairs if info.kind == "permute" else info.groups
        placement = place_groups(groups, cluster.scale_up.domain_size)
        out.append((Collective(op, n, float(size), str(info.dtype), info.group or "world",
                               phase_of(info.kernel), 1.0, f"kernel {info.kernel}"), placement))
    world = sizes.get(program.world)
    return (int(world) if world is not None else eval_int(Name(program.world), sizes)), out


def _bytes(decl: TensorDecl, sizes: Mapping[str, int]) -> float:
    n = float(decl.dtype.itemsize_bytes)
    for d in decl.shape:
        n *= eval_int(d, sizes)
    return n


def _stages(pp: int, binding: int) -> list[int]:
    if pp <= MAX_RANK_ROWS:
        return list(range(pp))
    keep = {*range(MAX_RANK_ROWS // 2), binding, pp - 2, pp - 1}
    return sorted(keep)


def _assemble(
    cluster: ClusterSpec, spec: HardwareSpec, plan: ParallelPlan, world: int,
    req: DistributedRequest, s: ModelStructure, work: RankWork, hbm_s: float,
    memory: MemoryRow, collectives_of: Callable[[int], tuple[list[Placed], tuple[str, ...]]],
) -> DistributedInfo:
    m = 1 if req.plan is None else req.global_batch // (plan.dp * req.micro_batch)
    rows: list[RankRow] = []
    coll_rows: list[CollectiveRow] = []
    assumptions: list[str] = [
        "per-hop latency and pipeline fill/drain are zero in the bound",
        "the busiest rank is charged the average of its pipeline/data-parallel peers",
        "collective buffers are not counted in memory",
    ]
    best: tuple[float, int, str] = (-1.0, 0, "compute")
    estimates: dict[int, float] = {}
    sums: dict[int, float] = {}
    for stage in range(plan.pp):
        colls, notes = collectives_of(stage)
        assumptions.extend(n for n in notes if n not in assumptions)
        directions: dict[str, tuple[float, float]] = {}
        estimate = 0.0
        for c, where in colls:
            if not c.in_bound:
                continue
            for ch in charge_collective(c, where, cluster):
                sent, received = directions.get(ch.resource, (0.0, 0.0))
                directions[ch.resource] = (sent + c.count * ch.sent_s,
                                           received + c.count * ch.received_s)
            estimate += c.count * alpha_estimate_s(c, where, cluster)
            if stage == 0:
                coll_rows.extend(_collective_rows(c, where, cluster))
        if stage == 0:
            coll_rows.extend(r for c, where in colls if not c.in_bound
                             for r in _collective_rows(c, where, cluster))
        # Note [Directions]: each link resource is busy for its busier direction's sum
        links = {res: max(pair) for res, pair in directions.items()}
        resources = {"compute": work.compute_s, "hbm": hbm_s, **links}
        binding = max(resources, key=lambda r: resources[r])
        time_s = resources[binding]
        estimates[stage] = max(work.compute_s, hbm_s, estimate)
        sums[stage] = sum(resources.values())
        rows.append(RankRow(stage=stage, compute_s=work.compute_s, hbm_s=hbm_s, links_s=links,
                            time_s=time_s, binding=binding, phases_s=dict(work.phases_s)))
        if time_s > best[0]:
            best = (time_s, stage, binding)
    time_s, stage, binding = best
    link_names = {"injection": f"injection ({cluster.scale_up.fabric} + NICs)",
                  "scale-out": f"scale-out ({cluster.scale_out.network})"
                  if cluster.scale_out else "scale-out"}
    bound = time_s if memory.feasible else None
    # a captured program: every rank runs it (SPMD); its tokens per step are unknown
    tokens = req.global_batch / req.micro_batch * s.tokens if req.plan is not None else None
    model_flops = work.model_flops if req.plan is not None else work.model_flops * world
    peak = work.peak_flops_per_s
    step = StepRow(
        time_s=bound,
        binding=("memory: infeasible" if not memory.feasible else link_names.get(binding, binding)),
        binding_rank=stage,
        mfu_ceiling=model_flops / (world * peak * bound) if bound and peak else None,
        mfu_peak_flops_per_s=peak,
        tokens_per_s_ceiling=tokens / bound if bound and tokens else None,
        model_flops=model_flops,
        no_overlap_s=sums[stage],
        alpha_estimate_s=estimates[stage],
    )
    shown = _stages(plan.pp, stage)
    return DistributedInfo(
        cluster=cluster.name, device=spec.name,
        plan=PlanInfo(label=plan.label() if req.plan is not None else f"captured (world {world})",
                      tp=plan.tp, pp=plan.pp, dp=plan.dp, cp=plan.cp,
                      ep=plan.ep, vpp=plan.vpp, zero=plan.zero, sp=plan.sp, world=world,
                      micro_batch=req.micro_batch, global_batch=req.global_batch,
                      micro_batches=m, recompute=req.recompute, phase=req.phase),
        structure=_structure_info(s), step=step,
        ranks=tuple(r for r in rows if r.stage in shown),
        collectives=tuple(coll_rows), memory=memory, assumptions=tuple(assumptions),
    )


def _stride(plan: ParallelPlan, axis: str) -> int:
    """The stride of an axis's groups; the gradient group of dp with cp > 1 is dp*cp
    ranks tp apart."""
    return plan.stride("cp") if axis == "dp" else plan.stride(axis)


def _collective_rows(c: Collective, where: int | GroupPlacement, cluster: ClusterSpec,
                     ) -> list[CollectiveRow]:
    charges = charge_collective(c, where, cluster)
    runs: list[tuple[str, float, float]] = [
        (ch.resource, ch.bytes, c.count * ch.time_s) for ch in charges] or [
        ("-", min_bytes_per_rank(c.op, c.group_size, c.bytes), 0.0)]
    return [
        CollectiveRow(op=c.op, axis=c.axis, group_size=c.group_size, phase=c.phase,
                      what=c.what, dtype=c.dtype, bytes_per_rank=c.bytes,
                      count_per_step=c.count, in_bound=c.in_bound, link=link,
                      min_bytes_per_rank=nbytes, time_s=time_s)
        for link, nbytes, time_s in runs
    ]


def bound_prepared(
    program: Program,
    graph: EinsumGraph,
    sizes: Mapping[str, int],
    request: DistributedRequest,
    *,
    phase_of: Callable[[str], str] | None,
    precision: PrecisionPolicy,
    size_constants: Mapping[str, int] | None = None,
) -> DistributedInfo:
    """`bound_step` for a prepared program: ``phase_of`` is the captured training
    step's (``None`` for a forward program).

    Raises:
        PlanError: E0806 ``--phase train`` on a forward program, or an inference phase
            on a training step; and as `bound_step`.
    """
    if request.phase == "train" and phase_of is None:
        raise PlanError("--phase train bounds a training step: add --train (or give "
                        "--phase prefill|decode for a forward)", code="E0806")
    if request.phase != "train" and phase_of is not None:
        raise PlanError(f"--phase {request.phase} bounds a forward program: drop --train",
                        code="E0806")
    return bound_step(program, graph, sizes, request, phase_of=phase_of or _forward,
                      precision=precision, size_constants=size_constants)


def _forward(_name: str) -> str:
    return "forward"
