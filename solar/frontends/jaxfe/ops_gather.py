"""Lowerings of ``gather`` and the ``scatter`` family: one kernel each, indirect indexing.

Contract: ``EqnCtx -> None``. Any XLA dimension numbers (offset/collapsed/batching dims,
``start_index_map``) and index mode are supported (`solar.frontends.kit.emit.gather`),
which covers embedding lookups (``E[idx]``), ``take_along_axis``, ``x[idx]`` and
``x.at[idx].set/add/mul/min/max``; the index vector is the indices' last dim
(``E[idx[b, s, 0], d]``). Scatters copy the operand into the output first, unless the
operand is a dead intermediate (XLA updates it in place; then only the updates are
charged).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from solar.frontends.jaxfe.core import EqnOperand, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import TensorInfo, UnsupportedOpError
from solar.frontends.kit.emit.gather import (
    GatherDims,
    IndexMode,
    ScatterDims,
    StartReader,
    emit_gather,
    emit_scatter,
    gather_fill,
)
from solar.ir import Expr, ReduceOp, Unary, lit

__all__: list[str] = []


_MODES: dict[str, IndexMode] = {"CLIP": "CLIP", "FILL_OR_DROP": "FILL_OR_DROP"}
"""XLA's ``GatherScatterMode`` names the emitter handles apart (the rest promise bounds)."""


def _mode(params: Any) -> IndexMode:
    mode = params.get("mode")
    name = (getattr(mode, "name", None) or str(mode)).rsplit(".", 1)[-1].upper()
    return _MODES.get(name, "PROMISE_IN_BOUNDS")


def _start(indices: EqnOperand) -> StartReader:
    """Entry ``j`` of the index vector: XLA's index vector is the indices' last dim."""
    return lambda batch, j: read(indices, [*batch, lit(j)])


@LOWERINGS.register("gather")
def _gather(ctx: EqnCtx) -> None:
    x, indices = ctx.ins
    dn = ctx.params["dimension_numbers"]
    dims = GatherDims(
        offset_dims=tuple(dn.offset_dims),
        collapsed=frozenset(dn.collapsed_slice_dims),
        start_index_map=tuple(dn.start_index_map),
        slice_sizes=tuple(int(s) for s in ctx.params["slice_sizes"]),
        operand_batching=tuple(getattr(dn, "operand_batching_dims", ()) or ()),
        start_batching=tuple(getattr(dn, "start_indices_batching_dims", ()) or ()),
    )
    out = ctx.out(0)
    value = ctx.params.get("fill_value")
    dtype = ctx.out_dtype(0)
    fill = gather_fill(dtype)
    if value is not None:
        fill = lit(float(value) if dtype.is_float else int(value))
    emit_gather(
        ctx.kernel(),
        x.shape,
        lambda idx: read(x, idx),
        _start(indices),
        dims,
        ctx.out_shape(0),
        out.at,
        mode=_mode(ctx.params),
        fill=fill,
    )


_SCATTER_OPS: dict[str, ReduceOp | None] = {
    "scatter": None,
    "scatter-add": "+",
    "scatter_add": "+",
    "scatter-mul": "*",
    "scatter_mul": "*",
    "scatter-min": "min",
    "scatter_min": "min",
    "scatter-max": "max",
    "scatter_max": "max",
    "scatter-sub": "+",  # adds the negated updates
    "scatter_sub": "+",
}


@LOWERINGS.register(*_SCATTER_OPS)
def _scatter(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    x, indices, updates = ctx.ins[:3]
    if len(ctx.ins) != 3:
        raise UnsupportedOpError("variadic scatter")
    dn = ctx.params["dimension_numbers"]
    dims = ScatterDims(
        update_window_dims=tuple(dn.update_window_dims),
        inserted=frozenset(dn.inserted_window_dims),
        scatter_to_operand=tuple(dn.scatter_dims_to_operand_dims),
        operand_batching=tuple(getattr(dn, "operand_batching_dims", ()) or ()),
        start_batching=tuple(getattr(dn, "scatter_indices_batching_dims", ()) or ()),
    )
    inplace = ctx.lowerer.reusable(x)
    if not inplace and (donated := ctx.lowerer.take_donated(x)) is not None:
        x, inplace = donated, True
    out = x if inplace else ctx.out(0)
    assert isinstance(out, TensorInfo)
    negate = ctx.prim in ("scatter-sub", "scatter_sub")

    def update(idx: Sequence[Expr]) -> Expr:
        return Unary("-", read(updates, idx)) if negate else read(updates, idx)

    emit_scatter(
        ctx.kernel(),
        ctx.out_shape(0),
        out.at,
        _start(indices),
        dims,
        updates.shape,
        update,
        updates.dtype,
        _SCATTER_OPS[ctx.prim],
        mode=_mode(ctx.params),
        copy=None if inplace else (lambda idx: read(x, idx)),
    )
    return (out,) if inplace else None
