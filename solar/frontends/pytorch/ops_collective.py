"""Lowerings of torch.distributed collectives: the functional ones (``_c10d_functional``)
and the in-place ``c10d`` ops behind ``dist.all_reduce(t)`` and friends.

Contract: each collective call becomes one collective kernel (`solar.ir.Collective`)
over whole program-level tensors; ``wait_tensor`` and ``_wrap_tensor_autograd`` are
free (they return their input). The group argument is a process-group name, resolved
to its member ranks while the capture's process group is alive (`GROUP_RANKS`, set by
`solar.frontends.pytorch.distributed`), and named by `solar.frontends.kit.collectives`.
Outside a distributed capture, and for a collective on a view (but an all-reduce or
broadcast of all of the view's storage: Note [Elementwise collectives on views]), a
reduction torch has
but the IR has not (``band``...), or uneven all-to-all splits, the op stays uncovered.
DTensor, FSDP2 and tensor-parallel modules reach these ops through their own dispatch
(docs/distributed.md, "Capturing distributed programs").
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from solar.frontends.kit import TensorInfo, UnsupportedOpError
from solar.frontends.kit.collectives import RankContext, current_rank, group_for
from solar.frontends.kit.context import BuilderKernels
from solar.frontends.pytorch.lowering_utils import out0, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Collective, CollectiveKind, CollectiveOp, Expr, IntLit

__all__ = ["GROUP_RANKS", "SENDS"]

GROUP_RANKS: ContextVar[Callable[[str], tuple[int, ...]] | None] = ContextVar(
    "solar_group_ranks", default=None
)
"""Process-group name -> member ranks of the capture being lowered."""


@dataclass
class Sends:
    """A rank's point-to-point state while it is lowered: the sends no receive has
    paired yet, and each ``permute`` kernel's destination (for the rank merge)."""

    pending: list[tuple[TensorInfo, int]] = field(default_factory=list)
    destinations: dict[str, int] = field(default_factory=dict)


SENDS: ContextVar[Sends | None] = ContextVar("solar_sends", default=None)
"""The point-to-point state of the rank being lowered (Note [Point-to-point capture])."""

_OPS: dict[str, CollectiveOp] = {
    "sum": "sum",
    "avg": "avg",
    "product": "prod",
    "max": "max",
    "min": "min",
}


_RED_OP_TYPES: dict[int, CollectiveOp] = {0: "sum", 1: "avg", 2: "prod", 3: "min", 4: "max"}
"""c10d's ``RedOpType`` values (the recorder writes a ``ReduceOp`` as ``redop:<n>``)."""


def _group(group_name: object) -> tuple[str | None, tuple[int, ...]]:
    resolve, ctx = GROUP_RANKS.get(), current_rank.get()
    if resolve is None or ctx is None:
        raise UnsupportedOpError("a collective outside a distributed capture")
    members = resolve(str(group_name).removeprefix("pg:"))
    return group_for(members, ctx.world), members


def _op(value: object) -> CollectiveOp:
    text = str(value).lower()
    if text.startswith("redop:"):
        op = _RED_OP_TYPES.get(int(text.removeprefix("redop:")))
    else:
        op = _OPS.get(text)
    if op is None:
        raise UnsupportedOpError(f"reduction {value!r} has no IR collective")
    return op


def _emit(
    ctx: LowerCtx, call: OpCall, kind: CollectiveKind, source: int = 0, **fields: object
) -> tuple[TensorInfo, ...] | None:
    """One collective kernel from tensor argument ``source`` (a one-tensor list: its
    tensor) into the call's first output (Note [Elementwise collectives on views])."""
    x, out = call.arg(source, "input"), out0(call)
    if isinstance(x, tuple) and len(x) == 1:
        x = x[0]
    if not isinstance(x, TensorInfo):
        raise UnsupportedOpError(f"{call.target}: the source is not one tensor")
    if not x.is_storage and out.is_storage and kind in ("all_reduce", "broadcast") \
            and x.numel == _numel(x.ref.shape) and isinstance(ctx.host, BuilderKernels):
        whole = ctx.host.pb.tensor("temp", x.dtype, x.ref.shape, f"{out.ref.name}_whole")
        ctx.collective(kind, Collective(kind, whole.name, x.ref.name, **fields))  # type: ignore[arg-type]
        return (TensorInfo(whole, x.shape, x.dtype, x.index_map),)
    if not x.is_storage or not out.is_storage:
        raise UnsupportedOpError("a collective on a view")
    ctx.collective(kind, Collective(kind, out.ref.name, x.ref.name, **fields))  # type: ignore[arg-type]
    return None


# Note [Elementwise collectives on views]
# A row-parallel Linear's output reaches its all-reduce as a view: ``addmm`` writes
# ``[tokens, hidden]`` and the view gives it back the input's ``[batch, seq, hidden]``.
# An all-reduce (or broadcast) treats every element alike, so on a view of all of its
# storage's elements it is the collective of the storage, viewed the same way: the
# kernel reduces the storage into a new one of its shape, and the call's result is that
# tensor through the view's map. The bytes are the view's (the same elements).


def _numel(shape: tuple[Expr, ...]) -> int:
    n = 1
    for d in shape:
        if not isinstance(d, IntLit):
            return -1
        n *= d.value
    return n


@LOWERINGS.register("_c10d_functional.all_reduce")
def _all_reduce(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...] | None:
    group, _ = _group(call.arg(2, "group_name"))
    return _emit(ctx, call, "all_reduce", op=_op(call.arg(1, "reduce_op")), group=group)


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
def _broadcast(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...] | None:
    # The backends read ``src`` as a position in the group (gloo rejects a global rank
    # outside it), whatever the group: so does the IR's ``root``.
    group, members = _group(call.arg(2, "group_name"))
    src = int(call.arg(1, "src"))
    if not 0 <= src < len(members):
        raise UnsupportedOpError(f"broadcast from position {src} of a group of {len(members)}")
    return _emit(ctx, call, "broadcast", root=src, group=group)


@LOWERINGS.register("_c10d_functional.wait_tensor", "_c10d_functional._wrap_tensor_autograd")
def _identity(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    return (tensor_arg(call, 0, "input"),)


# The in-place c10d ops (``dist.all_reduce(t)``, DDP's gradient hooks...): each writes
# a new version of its tensor argument, which the driver declares as the call's output.
@LOWERINGS.register("c10d.allreduce_")
def _c10d_all_reduce(ctx: LowerCtx, call: OpCall) -> None:
    group, _ = _group(call.arg(1, "process_group"))
    _emit(ctx, call, "all_reduce", op=_op(call.arg(2, "reduce_op")), group=group)


@LOWERINGS.register("c10d.broadcast_")
def _c10d_broadcast(ctx: LowerCtx, call: OpCall) -> None:
    group, members = _group(call.arg(1, "process_group"))
    root = int(call.arg(2, "root_rank"))  # dist.broadcast passes the position in the group
    if not 0 <= root < len(members) or int(call.arg(3, "root_tensor", 0)) != 0:
        raise UnsupportedOpError("broadcast from outside the group or of a list element")
    _emit(ctx, call, "broadcast", root=root, group=group)


@LOWERINGS.register("c10d._allgather_base_")
def _c10d_all_gather(ctx: LowerCtx, call: OpCall) -> None:
    group, _ = _group(call.arg(2, "process_group"))
    _emit(ctx, call, "all_gather", source=1, dim=0, group=group)


@LOWERINGS.register("c10d._reduce_scatter_base_")
def _c10d_reduce_scatter(ctx: LowerCtx, call: OpCall) -> None:
    group, _ = _group(call.arg(2, "process_group"))
    op = _op(call.arg(3, "reduce_op"))
    _emit(ctx, call, "reduce_scatter", source=1, op=op, dim=0, group=group)


def _sends() -> Sends:
    state = SENDS.get()
    if state is None:
        raise UnsupportedOpError("a send or receive outside a distributed capture")
    return state


@LOWERINGS.register("c10d.send")
def _send(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    """Remember the tensor and the destination; the matching receive moves it."""
    (x,) = call.arg(0, "tensors")
    _, members = _group(call.arg(1, "process_group"))
    _sends().pending.append((x, members[int(call.arg(2, "dstRank"))]))
    return ()


@LOWERINGS.register("c10d.recv_")
def _recv(ctx: LowerCtx, call: OpCall) -> None:
    """The buffer's new version: a ``permute`` from this rank's oldest unpaired send at
    the same offset (an SPMD exchange: every rank sends, and a receive from ``rank - k``
    gets what that rank sent to its ``+ k``), else the oldest unpaired send."""
    state = _sends()
    if not state.pending:
        raise UnsupportedOpError("a receive without a send on this rank")
    _, members = _group(call.arg(1, "process_group"))
    ctx_rank = current_rank.get() or RankContext(0, 1)  # set: `_group` checked it
    me, world = ctx_rank.rank, ctx_rank.world
    offset = (me - members[int(call.arg(2, "srcRank"))]) % world
    match = [k for k, (_, d) in enumerate(state.pending) if (d - me) % world == offset]
    x, dest = state.pending.pop(match[0] if match else 0)
    out = out0(call)
    if not x.is_storage or not out.is_storage:
        raise UnsupportedOpError("a send or receive of a view")
    name = ctx.collective("permute", Collective("permute", out.ref.name, x.ref.name, to=IntLit(0)))
    state.destinations[name] = dest
