"""The plan options of ``solar analyze`` (``--cluster``, ``--parallel``, ...) and their parsing.

Everything here runs before any capture, so a bad plan, an unknown cluster or a
plan that needs more GPUs than the cluster has fails in milliseconds (E0405, E0801,
E0803, E0804, E0806; docs/distributed.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeAlias

import typer

from solar.diagnostics import PlanError
from solar.options import Recompute
from solar.options import StepPhase as Phase

if TYPE_CHECKING:
    from solar.distributed import DistributedRequest

__all__ = [
    "ClusterOption",
    "FailOption",
    "MoeLoadOption",
    "MoeSlotsOption",
    "GlobalBatchOption",
    "MicroBatchOption",
    "ParallelOption",
    "PhaseOption",
    "PlanFileOption",
    "RecomputeOption",
    "ScheduleOption",
    "distributed_request",
    "parse_schedules",
]

ClusterOption: TypeAlias = Annotated[
    str | None,
    typer.Option("--cluster", metavar="CLUSTER",
                 help="Bound a parallel plan on this cluster: a name from `solar specs "
                      "clusters` or a cluster YAML file (docs/distributed.md)."),
]
ParallelOption: TypeAlias = Annotated[
    str | None,
    typer.Option("--parallel", metavar="PLAN",
                 help="The plan: tp=..,pp=..,dp=..[,cp=..,ep=..,vpp=..,zero=0-3,sp=0|1,"
                      "world=N] (with --cluster)."),
]
PlanFileOption: TypeAlias = Annotated[
    Path | None,
    typer.Option("--plan", metavar="FILE",
                 help="A plan YAML file: parallel:, heads:, layers: (module path), "
                      "replicated: [module paths], tp_plan: {module path: "
                      "colwise|rowwise|replicate}."),
]
MicroBatchOption: TypeAlias = Annotated[
    int | None,
    typer.Option("--micro-batch", help="Samples per micro-batch (the program's own batch)."),
]
GlobalBatchOption: TypeAlias = Annotated[
    int | None, typer.Option("--global-batch", help="Samples per step over all replicas.")
]
RecomputeOption: TypeAlias = Annotated[
    Recompute, typer.Option("--recompute", help="Activation recompute: none, selective or full.")
]
PhaseOption: TypeAlias = Annotated[
    Phase | None,
    typer.Option("--phase", help="train (one optimizer step; default with --train), prefill "
                                 "or decode (one forward; the default otherwise)."),
]

ScheduleOption: TypeAlias = Annotated[
    str | None,
    typer.Option("--schedule", metavar="NAMES",
                 help="Pipeline schedules to bound, comma-separated: gpipe, 1f1b, "
                      "interleaved, zb-h1, zb-h2, zbv, dualpipe, or all (with --train and "
                      "pp > 1; docs/distributed.md)."),
]

FailOption: TypeAlias = Annotated[
    list[str] | None,
    typer.Option("--fail", metavar="stage=S:k=K",
                 help="K data-parallel replicas of pipeline stage S are down; their "
                      "micro-batches go to the survivors (repeatable; docs/distributed.md)."),
]

MoeLoadOption: TypeAlias = Annotated[
    str | None,
    typer.Option("--moe-load", metavar="FILE|uniform|zipf:A",
                 help="Tokens per expert per step and layer (.npz array `counts` or .csv "
                      "step,layer,expert,tokens), or a synthetic load."),
]
MoeSlotsOption: TypeAlias = Annotated[
    int | None,
    typer.Option("--moe-slots", min=1,
                 help="Expert slots per GPU for adaptive placement (default experts/ep)."),
]


def parse_schedules(text: str | None) -> tuple[str, ...]:
    """``--schedule`` as names (``all`` stays ``all``).

    >>> parse_schedules("1f1b, zbv")
    ('1f1b', 'zbv')

    Raises:
        PlanError: E0804 an unknown schedule name.
    """
    if text is None:
        return ()
    from solar.distributed.schedules import SCHEDULES

    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [n for n in names if n not in (*SCHEDULES, "all")]
    if bad or not names:
        raise PlanError(f"unknown --schedule `{', '.join(bad) or text}`", code="E0804",
                        notes=(f"schedules: {', '.join(SCHEDULES)}, all",))
    return names


def distributed_request(
    cluster: str | None,
    parallel: str | None,
    plan_file: Path | None,
    micro_batch: int | None,
    global_batch: int | None,
    recompute: Recompute,
    phase: Phase | None,
    *,
    train: bool,
    schedule: str | None = None,
    fail: list[str] | None = None,
    moe_load: str | None = None,
    moe_slots: int | None = None,
) -> DistributedRequest | None:
    """The `solar.distributed.DistributedRequest` the options ask for, or ``None``.

    Raises:
        PlanError: E0804 a malformed plan; E0806 plan options without --cluster (or a
            cluster without a plan); E0803 more GPUs than the cluster has.
        HardwareSpecError: E0405 an unknown cluster.
    """
    given = [n for n, v in (("--parallel", parallel), ("--plan", plan_file),
                            ("--micro-batch", micro_batch), ("--global-batch", global_batch),
                            ("--phase", phase), ("--schedule", schedule),
                            ("--fail", fail or None), ("--moe-load", moe_load),
                            ("--moe-slots", moe_slots)) if v is not None]
    if cluster is None:
        if given or recompute != "none":
            raise PlanError(f"{', '.join(given) or '--recompute'} need(s) --cluster",
                            code="E0806")
        return None
    from solar.distributed import DistributedRequest, load_plan_file, parse_parallel
    from solar.distributed.failures import parse_failure
    from solar.hw.cluster_loader import load_cluster_spec

    spec = load_cluster_spec(cluster)
    if parallel is not None and plan_file is not None:
        raise PlanError("give one of --parallel and --plan", code="E0806")
    pf = load_plan_file(plan_file) if plan_file is not None else None
    plan = pf.plan if pf is not None else (
        parse_parallel(parallel) if parallel is not None else None)  # None: as captured
    if plan is not None and spec.max_gpus is not None and plan.world > spec.max_gpus:
        raise PlanError(f"plan {plan.label()} needs {plan.world} GPUs; cluster {spec.name} "
                        f"has {spec.max_gpus}", code="E0803")
    chosen: Phase = phase or ("train" if train else "prefill")
    mb = micro_batch or 1
    return DistributedRequest(
        cluster=cluster, plan=plan, micro_batch=mb,
        global_batch=global_batch or mb * (plan.dp if plan is not None else 1),
        recompute=recompute,
        phase=chosen,
        plan_file=pf,
        schedules=parse_schedules(schedule),
        failures=tuple(parse_failure(f) for f in fail or ()),
        moe_load=moe_load, moe_slots=moe_slots,
    )
