"""Lowerings of reductions, arg-reductions, cumulative scans and pooling gradients.

Contract: ``EqnCtx -> None``; each equation emits one kernel:

* ``reduce_sum/max/min/prod``: ``out = init; out op= x`` over the reduced axes
  (16/8-bit float outputs accumulate in an f32 kernel-local, as XLA does).
  ``reduce_and/or`` on bools count the true elements (``cnt += i64(x)``) and compare.
  Over size-1 axes only, ``reduce_sum/max/min/prod`` is a free view (a squeeze).
* ``argmax``/``argmin``: the extreme value into a local, then the first index that
  attains it, a NaN included (``if x == m or x != x { out min= i }``): two passes, one
  kernel (Note [Arg-reduce NaN]).
  The reductions' loop nests and kernels are `solar.frontends.kit.emit.reduce`'s (the
  PyTorch frontend's reductions are adapters of the same emitters).
* ``cumsum/cumprod/cummax/cummin/cumlogsumexp``: `solar.frontends.kit.emit.scan`
  (a ``seq`` loop over the scanned axis carrying a running value), honouring ``reverse``.
* ``select_and_scatter_add``: the gradient of max/min pooling, the kit's
  `emit_select_scatter` (PyTorch's max-pooling backward is the same emitter);
  ``reduce_window`` itself is ops_pool.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from solar.frontends.jaxfe.core import EqnOperand, Lit, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import (
    TensorInfo,
    UnsupportedOpError,
    cast,
)
from solar.frontends.kit.emit.pool import WindowSpec, emit_select_scatter, select_by_compare
from solar.frontends.kit.emit.reduce import (
    ReduceRows,
    emit_arg_reduce,
    emit_count_reduce,
    emit_reduce,
)
from solar.frontends.kit.emit.scan import emit_scan
from solar.ir import (
    DType,
    Expr,
    IntLit,
    ReduceOp,
)

_REDUCE_OPS: dict[str, ReduceOp] = {
    "reduce_sum": "+",
    "reduce_max": "max",
    "reduce_min": "min",
    "reduce_prod": "*",
    "reduce_and": "min",
    "reduce_or": "max",
}


@LOWERINGS.register(*_REDUCE_OPS)
def _reduce(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    op = _REDUCE_OPS[ctx.prim]
    x = ctx.ins[0]
    dtype = ctx.out_dtype(0)
    axes = tuple(sorted(int(a) for a in ctx.params["axes"]))
    if ctx.prim in ("reduce_and", "reduce_or"):
        if dtype != DType.BOOL:
            raise UnsupportedOpError(f"bitwise `{ctx.prim}` on integers has no IR operator")
        _emit_bool_reduce(ctx, x, axes, every=ctx.prim == "reduce_and")
        return None
    if dtype == DType.BOOL and op in ("max", "min") and not isinstance(x, Lit):
        # jnp.max/min of bools is any/all; max=/min= are not defined on bools (E0213)
        _emit_bool_reduce(ctx, x, axes, every=op == "min")
        return None
    if isinstance(x, Lit):
        n = 1
        for a in axes:
            n *= x.shape[a]
        if op in ("max", "min") and n > 0:
            return (Lit(x.value, dtype, ctx.out_shape(0)),)
        if op == "+" and dtype.is_float:
            return (Lit(float(x.value) * n, dtype, ctx.out_shape(0)),)
    elif all(x.shape[a] == 1 for a in axes) and dtype == x.dtype:
        # Over size-1 axes only, a reduction combines each element with the identity
        # alone: no operation, a squeeze of ``x`` (XLA's algebraic simplifier turns it
        # into a bitcast). Autodiff emits it for the gradient of a broadcast bias.
        rank = x.rank

        def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
            it = iter(idx)
            return tuple(IntLit(0) if k in axes else next(it) for k in range(rank))

        return (x.view(ctx.out_shape(0), index_map),)
    out = ctx.out(0)
    rows = ReduceRows(ctx.kernel(), x.shape, axes)
    emit_reduce(rows, out.at(rows.kept), op, dtype, lambda dt: cast(read(x, rows.idx), x.dtype, dt))
    return None


def _emit_bool_reduce(ctx: EqnCtx, x: EqnOperand, axes: Sequence[int], *, every: bool) -> None:
    out = ctx.out(0)
    rows = ReduceRows(ctx.kernel(), x.shape, axes)
    emit_count_reduce(rows, out.at(rows.kept), read(x, rows.idx), every=every)


@LOWERINGS.register("argmax", "argmin")
def _argextreme(ctx: EqnCtx) -> None:
    x = ctx.ins[0]
    axes = tuple(int(a) for a in ctx.params["axes"])
    if len(axes) != 1:
        raise UnsupportedOpError("argmax/argmin over several axes")
    op: ReduceOp = "max" if ctx.prim == "argmax" else "min"
    out = ctx.out(0)
    rows = ReduceRows(ctx.kernel(), x.shape, axes)
    reader = lambda idx: read(x, idx)  # noqa: E731
    emit_arg_reduce(rows, reader, x.dtype, op, values=None, indices=out.at(rows.kept))


_CUM = {
    "cumsum": "sum",
    "cumprod": "prod",
    "cummax": "max",
    "cummin": "min",
    "cumlogsumexp": "logsumexp",
}


@LOWERINGS.register(*_CUM)
def _cumulative(ctx: EqnCtx) -> None:
    x = ctx.ins[0]
    out = ctx.out(0)
    emit_scan(
        ctx.kernel(),
        ctx.out_shape(0),
        int(ctx.params["axis"]),
        lambda idx: read(x, idx),
        x.dtype,
        out.at,
        out.dtype,
        _CUM[ctx.prim],
        reverse=bool(ctx.params.get("reverse", False)),
    )


_SELECT_OPS: dict[str, Literal[">", "<"]] = {"ge": ">", "gt": ">", "le": "<", "lt": "<"}


@LOWERINGS.register("select_and_scatter_add")
def _select_and_scatter_add(ctx: EqnCtx) -> None:
    """The gradient of max/min pooling: each window's source value is added at the
    window's first extreme tap (`solar.frontends.kit.emit.pool.emit_select_scatter` with
    `select_by_compare`: a select per tap, a scatter per window, as XLA's)."""
    src, x = ctx.ins
    p = ctx.params
    cmp = _SELECT_OPS.get(getattr(p["select_prim"], "name", str(p["select_prim"])))
    if cmp is None or not isinstance(x, TensorInfo) or not ctx.out_dtype(0).is_float:
        raise UnsupportedOpError("select_and_scatter_add with a select other than ge/le")
    spec = WindowSpec(
        window=tuple(int(v) for v in p["window_dimensions"]),
        strides=tuple(int(v) for v in p["window_strides"]),
        padding=tuple(int(lo) for lo, _ in p["padding"]),
    )
    select = select_by_compare(x, src.shape, spec, cmp)
    emit_select_scatter(ctx, src, ctx.out(0), select, names=("i", "o"))
