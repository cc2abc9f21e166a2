"""Lowerings of torch.distributed functional collectives (``_c10d_functional``).

Contract: each collective call becomes one collective kernel (`solar.ir.Collective`)
over whole program-level tensors; ``wait_tensor`` and ``_wrap_tensor_autograd`` are
free (they return their input). The group argument is a process-group name, resolved
to its member ranks while the capture's process group is alive (`GROUP_RANKS`, set by
`solar.frontends.pytorch.distributed`), and named by `solar.frontends.kit.collectives`.
Outside a distributed capture, and for a collective on a view, a reduction torch has
but the IR has not (``band``...), or uneven all-to-all splits, the op stays uncovered.
DTensor, FSDP2 and tensor-parallel modules reach these ops through their own dispatch
(docs/distributed.md, "Capturing distributed programs").
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from solar.frontends.kit import TensorInfo, UnsupportedOpError
from solar.frontends.kit.collectives import current_rank, group_for
from solar.frontends.pytorch.lowering_utils import out0, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Collective, CollectiveKind, CollectiveOp

__all__ = ["GROUP_RANKS"]

GROUP_RANKS: ContextVar[Callable[[str], tuple[int, ...]] | None] = ContextVar(
    "solar_group_ranks", default=None
)
"""Process-group name -> member ranks of the capture being lowered."""

_OPS: dict[str, CollectiveOp] = {
    "sum": "sum",
    "avg": "avg",
    "product": "prod",
    "max": "max",
    "min": "min",
}


def _group(group_name: object) -> tuple[str | None, tuple[int, ...]]:
    resolve, ctx = GROUP_RANKS.get(), current_rank.get()
    if resolve is None or ctx is None:
        raise UnsupportedOpError("a collective outside a distributed capture")
    members = resolve(str(group_name))
    return group_for(members, ctx.world), members


def _op(value: object) -> CollectiveOp:
    op = _OPS.get(str(value).lower())
    if op is None:
        raise UnsupportedOpError(f"reduction {value!r} has no IR collective")
    return op


def _emit(ctx: LowerCtx, call: OpCall, kind: CollectiveKind, **fields: object) -> None:
    x, out = tensor_arg(call, 0, "input"), out0(call)
    if not x.is_storage or not out.is_storage:
        raise UnsupportedOpError("a collective on a view")
    kb = ctx.kernel(kind)
    kb.collective = Collective(kind, out.ref.name, x.ref.name, **fields)  # type: ignore[arg-type]


@LOWERINGS.register("_c10d_functional.all_reduce")
def _all_reduce(ctx: LowerCtx, call: OpCall) -> None:
    group, _ = _group(call.arg(2, "group_name"))
    _emit(ctx, call, "all_reduce", op=_op(call.arg(1, "reduce_op")), group=group)


@LOWERINGS.register("_c10d_functional.all_gather_into_tensor")
def _all_gather(ctx: LowerCtx, call: OpCall) -> None:
    group, _ = _group(call.arg(2, "group_name"))
    _emit(ctx, call, "all_gather", dim=0, group=group)


@LOWERINGS.register("_c10d_functional.reduce_scatter_tensor")
def _reduce_scatter(ctx: LowerCtx, call: OpCall) -> None:
    group, _ = _group(call.arg(3, "group_name"))
    _emit(ctx, call, "reduce_scatter", op=_op(call.arg(1, "reduce_op")), dim=0, group=group)


@LOWERINGS.register("_c10d_functional.all_to_all_single")
def _all_to_all(ctx: LowerCtx, call: OpCall) -> None:
    group, members = _group(call.arg(3, "group_name"))
    x = tensor_arg(call, 0, "input")
    even = [x.shape[0] // len(members)] * len(members) if x.rank else []
    for splits in (call.arg(1, "output_split_sizes"), call.arg(2, "input_split_sizes")):
        if splits is not None and list(splits) != even:
            raise UnsupportedOpError("all_to_all_single with uneven splits")
    _emit(ctx, call, "all_to_all", split=0, concat=0, group=group)


@LOWERINGS.register("_c10d_functional.broadcast")
def _broadcast(ctx: LowerCtx, call: OpCall) -> None:
    # The backends read ``src`` as a position in the group (gloo rejects a global rank
    # outside it), whatever the group: so does the IR's ``root``.
    group, members = _group(call.arg(2, "group_name"))
    src = int(call.arg(1, "src"))
    if not 0 <= src < len(members):
        raise UnsupportedOpError(f"broadcast from position {src} of a group of {len(members)}")
    _emit(ctx, call, "broadcast", root=src, group=group)


@LOWERINGS.register("_c10d_functional.wait_tensor", "_c10d_functional._wrap_tensor_autograd")
def _identity(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    return (tensor_arg(call, 0, "input"),)
