"""One tensor-parallel rank of a single-device model, derived by torch's own sharding.

Contract: ``(model file, tp, plan patterns) -> DerivedCapture`` (`capture_tp_rank`): the
model is built on the meta device to infer its TP plan (or to resolve the plan file's
module paths: `solar.frontends.pytorch.derive_plan`); then, under the fake process group
of ``tp`` ranks, it is built again on fake tensors, sharded by ``parallelize_module`` with
that plan, and rank 0 is captured with its collectives through the distributed capture
(`solar.frontends.pytorch.distributed.capture_rank`). Every TP rank runs the same
program on its shard (SPMD), so rank 0's program, with the world size declared, is each
rank's. Nothing of the model's size is allocated.

A model without an inferable plan yields a `DerivedCapture` with no program and the
reason; a model whose code does not run on tensor-parallel shards (a head count or width
fixed in the code where the shard has fewer) the same, with the error as the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solar.diagnostics import FrontendError
from solar.frontends.protocol import FrontendResult
from solar.frontends.pytorch.derive_plan import (
    TPPlan,
    apply_tp_plan,
    given_tp_plan,
    infer_tp_plan,
    tp_mesh,
)
from solar.frontends.pytorch.train_step import TrainStep
from solar.ir import GroupDecl, IntLit, Program, SizeDecl

__all__ = ["DerivedCapture", "capture_tp_rank", "rank_as_spmd"]


@dataclass(frozen=True, slots=True)
class DerivedCapture:
    """One derived TP rank.

    Attributes:
        plan: the plan applied (or, with ``front`` None, the one that could not be).
        front: the rank's program as a frontend result (world size ``tp`` declared);
            None where no rank program could be derived.
        reason: why ``front`` is None.
    """

    plan: TPPlan
    front: FrontendResult | None
    reason: str | None = None


def rank_as_spmd(program: Program, world: int) -> Program:
    """Rank 0's lowered ``program`` as the SPMD program of ``world`` identical ranks: the
    world size and the process groups it names declared (`merge_ranks` for ranks known
    to run one program)."""
    from solar.frontends.kit.collectives import group_key

    names = sorted({k.collective.group for k in program.kernels
                    if k.collective is not None and k.collective.group is not None})
    taken = {s.name for s in program.sizes} | {t.name for t in program.tensors}
    wname = next(n for n in ("W", "W_", "W__", "WORLD_") if n not in taken)
    return dataclasses.replace(
        program, sizes=(SizeDecl(wname, IntLit(world)), *program.sizes), world=wname,
        groups=tuple(GroupDecl(n, group_key(n, world)) for n in names),
    )


def _plan_of(path: Path, tp: int, overrides: Mapping[str, int],
             patterns: Mapping[str, str] | None, where: str) -> TPPlan:
    from solar.frontends.pytorch.loader import instantiate, source_for_file
    from solar.frontends.pytorch.meta_mode import MetaMode

    built = instantiate(source_for_file(path, overrides=overrides, train=True),
                        fake_mode=MetaMode(), real_fallback=False)
    if built.module is None:
        return TPPlan({}, "inferred", "the program is not an nn.Module")
    if patterns:
        return given_tp_plan(built.module, patterns, where=where)
    return infer_tp_plan(built.module, tp)


def capture_tp_rank(
    path: str | Path,
    *,
    tp: int,
    overrides: Mapping[str, int] | None = None,
    step: TrainStep | None = None,
    patterns: Mapping[str, str] | None = None,
    where: str = "plan file",
) -> DerivedCapture:
    """Derive and capture one TP rank of the model file ``path`` (module docstring); one
    training ``step`` of it when given.

    Raises:
        PlanError: E0805 a plan-file path that names no Linear of the model.
        FrontendError: the model file cannot be loaded or built (E0501-E0504).
    """
    from solar.frontends.pytorch.capture_dist import distributed_capture
    from solar.frontends.pytorch.distributed import _fake_group, capture_rank
    from solar.frontends.pytorch.loader import source_for_file

    path = Path(path)
    sizes = dict(overrides or {})
    plan = _plan_of(path, tp, sizes, patterns, where)
    if plan.reason is not None:
        return DerivedCapture(plan, None, plan.reason)

    try:
        with _fake_group(0, tp), distributed_capture():
            mesh = tp_mesh(tp)

            def shard(model: Any) -> Any:
                return apply_tp_plan(model, plan, mesh)

            source = dataclasses.replace(
                source_for_file(path, overrides=sizes, train=step is not None, step=step),
                transform=shard)
            capture, lowered, _ = capture_rank(path, 0, tp, step, source=source)
    except FrontendError as err:
        if err.code not in ("E0501", "E0505"):
            raise
        cause = err.__cause__
        why = f"{type(cause).__name__}: {cause}" if cause is not None else err.message
        return DerivedCapture(plan, None, "the model's code does not run on its tensor-"
                              f"parallel shards ({why.splitlines()[0][:200]})")
    program = rank_as_spmd(lowered.program, tp)
    front = FrontendResult(
        name="torch",
        program=program,
        captured_with=f"ATen calls of rank 0 of {tp} under the fake process group",
        ops_total=lowered.ops_seen,
        uncovered=lowered.coverage,
        keep_live=lowered.keep_alive,
        uncovered_values=tuple(v.name for v in lowered.uncovered_values),
        source_sizes=dict(capture.info.sizes),
    )
    return DerivedCapture(plan, front)
