"""Lowerings of JAX collectives inside ``shard_map``: psum/pmax/pmin, all_gather,
reduce_scatter (``psum_scatter``), all_to_all, ppermute and axis_index.

Contract: a ``shard_map`` body is lowered as the program of one device (rank); each
collective equation becomes one collective kernel (`solar.ir.Collective`) whose group
is the ranks that differ only along the named mesh axes (the mesh is `MESH`, set by
`solar.frontends.jaxfe.distributed`; rank = the row-major index of a device's mesh
coordinates). ``ppermute`` records every rank's destination in `DESTINATIONS` for the
rank merge to fit one expression of ``rank``; ``axis_index`` is the rank's coordinate,
``(rank // stride) % size``. Outside a distributed capture these stay uncovered.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from math import prod

from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import UnsupportedOpError
from solar.frontends.kit.collectives import group_for
from solar.ir import (
    RANK,
    Access,
    Assign,
    Binary,
    Cast,
    Collective,
    CollectiveKind,
    Expr,
    IntLit,
    Name,
)

__all__ = ["DESTINATIONS", "MESH"]

MESH: ContextVar[tuple[tuple[str, int], ...] | None] = ContextVar("solar_mesh", default=None)
"""The ``shard_map`` mesh being lowered: ``(axis name, size)`` in mesh order."""

DESTINATIONS: ContextVar[dict[str, dict[int, int]] | None] = ContextVar(
    "solar_destinations", default=None
)
"""``ppermute`` kernel name -> {sending rank: receiving rank}, filled while lowering."""


def _mesh() -> tuple[tuple[str, int], ...]:
    mesh = MESH.get()
    if mesh is None:
        raise UnsupportedOpError("a collective outside a shard_map capture")
    return mesh


def _axes(value: object) -> tuple[str, ...]:
    names = value if isinstance(value, tuple | list) else (value,)
    return tuple(str(n) for n in names)


def _stride(mesh: Sequence[tuple[str, int]], axis: str) -> tuple[int, int]:
    """(stride, size) of ``axis`` in the row-major rank numbering."""
    names = [n for n, _ in mesh]
    k = names.index(axis)
    return prod(s for _, s in mesh[k + 1 :]), mesh[k][1]


def _members(axes: Sequence[str]) -> tuple[int, ...]:
    """Rank 0's group over ``axes`` (the groups are its translates)."""
    mesh = _mesh()
    ranks = [0]
    for axis in axes:
        stride, size = _stride(mesh, axis)
        ranks = [r + j * stride for r in ranks for j in range(size)]
    return tuple(sorted(ranks))


def _group(axes: Sequence[str]) -> tuple[str | None, int]:
    members = _members(axes)
    return group_for(members, prod(s for _, s in _mesh())), len(members)


def _emit(ctx: EqnCtx, kind: CollectiveKind, **fields: object) -> str:
    """Start the collective kernel of ``ctx``'s equation; returns its name."""
    if ctx.params.get("axis_index_groups") is not None:
        raise UnsupportedOpError(f"{ctx.prim} with axis_index_groups")
    if len(ctx.ins) != 1:
        raise UnsupportedOpError(f"{ctx.prim} of {len(ctx.ins)} operands")
    x, out = ctx.tensor_in(0), ctx.out(0)
    if not x.is_storage:
        raise UnsupportedOpError(f"{ctx.prim} of a view")
    if ctx.nested:
        raise UnsupportedOpError(f"{ctx.prim} inside a loop body")
    return ctx.collective(kind, Collective(kind, out.ref.name, x.ref.name, **fields))  # type: ignore[arg-type]


@LOWERINGS.register("psum", "psum_invariant", "pmax", "pmin")
def _all_reduce(ctx: EqnCtx) -> None:
    group, _ = _group(_axes(ctx.params["axes"]))
    op = {"pmax": "max", "pmin": "min"}.get(ctx.prim, "sum")
    _emit(ctx, "all_reduce", op=op, group=group)


@LOWERINGS.register("all_gather")
def _all_gather(ctx: EqnCtx) -> None:
    group, _ = _group(_axes(ctx.params["axis_name"]))
    _emit(ctx, "all_gather", dim=int(ctx.params["all_gather_dimension"]), group=group)


@LOWERINGS.register("reduce_scatter")
def _reduce_scatter(ctx: EqnCtx) -> None:
    group, _ = _group(_axes(ctx.params["axis_name"]))
    _emit(ctx, "reduce_scatter", op="sum", dim=int(ctx.params["scatter_dimension"]), group=group)


@LOWERINGS.register("all_to_all")
def _all_to_all(ctx: EqnCtx) -> None:
    if not ctx.params.get("tiled", False):
        raise UnsupportedOpError("all_to_all with tiled=False")
    group, _ = _group(_axes(ctx.params["axis_name"]))
    split, concat = int(ctx.params["split_axis"]), int(ctx.params["concat_axis"])
    _emit(ctx, "all_to_all", split=split, concat=concat, group=group)


@LOWERINGS.register("ppermute")
def _ppermute(ctx: EqnCtx) -> None:
    mesh = _mesh()
    axes = _axes(ctx.params["axis_name"])
    if len(axes) != 1:
        raise UnsupportedOpError("ppermute over several axes")
    stride, size = _stride(mesh, axes[0])
    moves = {int(a): int(b) for a, b in ctx.params["perm"]}
    table = DESTINATIONS.get()
    if table is None:
        raise UnsupportedOpError("ppermute outside a shard_map capture")
    dest = {}
    for rank in range(prod(s for _, s in mesh)):
        coord = (rank // stride) % size
        if coord in moves:
            dest[rank] = rank + (moves[coord] - coord) * stride
    table[_emit(ctx, "permute", to=IntLit(0))] = dest  # the rank merge fits `to`


@LOWERINGS.register("axis_index")
def _axis_index(ctx: EqnCtx) -> None:
    stride, size = _stride(_mesh(), str(ctx.params["axis_name"]))
    rank: Expr = Name(RANK) if stride == 1 else Binary("//", Name(RANK), IntLit(stride))
    coord = Binary("%", rank, IntLit(size))
    out = ctx.out(0)
    kb = ctx.kernel()
    kb.emit(Assign(Access(out.ref.name, ()), Cast(out.dtype, coord)))
