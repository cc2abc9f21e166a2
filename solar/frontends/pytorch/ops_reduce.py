"""Lowerings of reductions: sum/mean/prod, max/min (+indices), argmax, var/std, norms,
all/any, count_nonzero, logsumexp, softmax/log_softmax.

Contract: one kernel per call. Loops over the kept dims enclose one or more
reduction passes over the reduced dims (two-pass ops such as ``var``, ``argmax`` and
``softmax`` keep their intermediate per-row values in kernel-local buffers, which are
not DRAM traffic). Accumulation happens in the output type, or in f32 for 16/8-bit
float outputs, as eager kernels do. ``argmax``/``argmin`` return the first index of the
extremum (ties -> lowest index; a NaN is the extremum), like torch. The loop nests and
the shared reductions are `solar.frontends.kit.emit.reduce`'s; this module adapts ATen's
arguments (``dim``, ``keepdim``, ``correction``, ``p``) to them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from solar.frontends.kit import (
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    reduce_identity,
    zero,
)
from solar.frontends.kit.emit.reduce import (
    ReduceRows,
    emit_arg_reduce,
    emit_count_reduce,
    emit_moments,
    emit_reduce,
)
from solar.frontends.pytorch.lowering_utils import (
    binop,
    fn,
    norm_dim,
    norm_dims,
    out0,
    sel,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, DType, Expr, Reduce, ReduceOp, Stmt, lit

__all__: list[str] = []


def _rows(ctx: LowerCtx, x: TensorInfo, dims: Sequence[int]) -> ReduceRows:
    return ReduceRows(ctx.kernel(), x.shape, dims)


def _read(x: TensorInfo, rows: ReduceRows, dtype: DType) -> Expr:
    """``x`` at the loop indices, cast to ``dtype``."""
    return cast(x.at(rows.idx), x.dtype, dtype)


def _dims_arg(call: OpCall, x: TensorInfo, pos: int, name: str) -> tuple[int, ...]:
    return norm_dims(call.arg(pos, name), x.rank)


def _simple(
    ctx: LowerCtx,
    call: OpCall,
    dims: Sequence[int],
    keepdim: bool,
    op: ReduceOp,
    value: Callable[[Expr, DType], Expr],
    finish: Callable[[Expr, int], Expr] | None = None,
) -> None:
    """One reduction ``out = finish(op-reduce of value(x, acc dtype))``."""
    x, out = tensor_arg(call, 0, "self"), out0(call)
    rows = _rows(ctx, x, dims)
    emit_reduce(
        rows,
        out.at(rows.out_index(keepdim)),
        op,
        out.dtype,
        lambda dt: value(x.at(rows.idx), dt),
        finish=finish,
    )


def _as(x: TensorInfo) -> Callable[[Expr, DType], Expr]:
    """The element itself, cast to the accumulation type."""
    return lambda v, dt: cast(v, x.dtype, dt)


def _sum_dims(call: OpCall, x: TensorInfo) -> tuple[tuple[int, ...], bool]:
    if call.target.endswith(".default") or (len(call.args) < 2 and "dim" not in call.kwargs):
        return tuple(range(x.rank)), False
    return _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))


@LOWERINGS.register("aten.sum")
def _sum(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims, keep = _sum_dims(call, x)
    _simple(ctx, call, dims, keep, "+", _as(x))


@LOWERINGS.register("aten.nansum")
def _nansum(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims, keep = _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))

    def value(v: Expr, dt: DType) -> Expr:
        if not x.dtype.is_float:
            return cast(v, x.dtype, dt)
        return sel(fn("isnan", v), lit(0.0), cast(v, x.dtype, dt))

    _simple(ctx, call, dims, keep, "+", value)


@LOWERINGS.register("aten.mean")
def _mean(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims, keep = _sum_dims(call, x)
    _simple(ctx, call, dims, keep, "+", _as(x), lambda acc, n: binop("/", acc, lit(float(n))))


@LOWERINGS.register("aten.prod")
def _prod(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    if call.target.endswith(".default"):
        dims, keep = tuple(range(x.rank)), False
    else:
        dims, keep = (norm_dim(call.arg(1, "dim"), x.rank),), bool(call.arg(2, "keepdim", False))
    _simple(ctx, call, dims, keep, "*", _as(x))


def _extreme(op: ReduceOp) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x = tensor_arg(call, 0, "self")
        if call.target.endswith((".dim", ".dim_max", ".dim_min")):
            dim = norm_dim(call.arg(1, "dim"), x.rank)
            keep = bool(call.arg(2, "keepdim", False))
            _arg_extreme(ctx, x, (dim,), keep, op, call.outputs[0], call.outputs[1])
            return
        if call.target.endswith(".default") and call.op in ("max", "min"):
            dims, keep = tuple(range(x.rank)), False
        else:
            dims, keep = _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))
        if x.dtype == DType.BOOL:
            _count(ctx, call, x, dims, keep, every=op == "min")
            return
        _simple(ctx, call, dims, keep, op, _as(x))

    return lower


LOWERINGS.register("aten.max", "aten.amax")(_extreme("max"))
LOWERINGS.register("aten.min", "aten.amin")(_extreme("min"))


@LOWERINGS.register("aten.aminmax")
def _aminmax(ctx: LowerCtx, call: OpCall) -> None:
    """``aminmax(self, *, dim=None, keepdim=False) -> (min, max)``: both in one pass."""
    x = tensor_arg(call, 0, "self")
    lo_out, hi_out = (*call.outputs, None, None)[:2]
    if lo_out is None or hi_out is None:
        raise UnsupportedOpError("aminmax without both outputs")
    dim = call.arg(1, "dim")
    dims = tuple(range(x.rank)) if dim is None else (norm_dim(dim, x.rank),)
    keep = bool(call.arg(2, "keepdim", False))
    rows = _rows(ctx, x, dims)
    lo, hi = lo_out.at(rows.out_index(keep)), hi_out.at(rows.out_index(keep))
    value = _read(x, rows, lo_out.dtype)
    rows.emit(
        [
            Assign(lo, reduce_identity("min", lo_out.dtype)),
            Assign(hi, reduce_identity("max", hi_out.dtype)),
            *rows.over_reduced(Reduce(lo, "min", value), Reduce(hi, "max", value)),
        ]
    )


def _arg_extreme(
    ctx: LowerCtx,
    x: TensorInfo,
    dims: tuple[int, ...],
    keep: bool,
    op: ReduceOp,
    values: TensorInfo | None,
    indices: TensorInfo | None,
) -> None:
    rows = _rows(ctx, x, dims)
    at = rows.out_index(keep)
    emit_arg_reduce(
        rows,
        x.at,
        x.dtype,
        op,
        values=values.at(at) if values is not None else None,
        indices=indices.at(at) if indices is not None else None,
    )


def _argext(op: ReduceOp) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x = tensor_arg(call, 0, "self")
        dim = call.arg(1, "dim")
        dims = tuple(range(x.rank)) if dim is None else (norm_dim(dim, x.rank),)
        keep = bool(call.arg(2, "keepdim", False))
        _arg_extreme(ctx, x, dims, keep and dim is not None, op, None, out0(call))

    return lower


LOWERINGS.register("aten.argmax")(_argext("max"))
LOWERINGS.register("aten.argmin")(_argext("min"))


def _correction(call: OpCall) -> float:
    if "correction" in call.kwargs:
        c = call.kwargs["correction"]
        return 1.0 if c is None else float(c)
    if call.target.endswith(".default"):
        return 1.0 if call.arg(1, "unbiased", True) else 0.0
    return 1.0 if call.arg(2, "unbiased", True) else 0.0


def _moments(root: bool, with_mean: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x = tensor_arg(call, 0, "self")
        if call.target.endswith(".default"):
            dims, keep = tuple(range(x.rank)), False
        else:
            dims = _dims_arg(call, x, 1, "dim")
            keep = bool(call.kwargs.get("keepdim", call.arg(3, "keepdim", False)))
        out = out0(call)
        rows = _rows(ctx, x, dims)
        at = rows.out_index(keep)
        mean = call.outputs[1] if with_mean and len(call.outputs) > 1 else None
        emit_moments(
            rows,
            x.at,
            x.dtype,
            out.dtype,
            correction=_correction(call),
            root=root,
            target=out.at(at),
            mean_target=mean.at(at) if mean is not None else None,
        )

    return lower


LOWERINGS.register("aten.var")(_moments(False, False))
LOWERINGS.register("aten.std")(_moments(True, False))
LOWERINGS.register("aten.var_mean")(_moments(False, True))
LOWERINGS.register("aten.std_mean")(_moments(True, True))


def _norm_terms(p: float, x: TensorInfo) -> tuple[ReduceOp, Callable[[Expr, DType], Expr]]:
    """The combine op and element term of the ``p``-norm (before the final root)."""
    if p in (math.inf, -math.inf):
        return ("max" if p > 0 else "min"), lambda v, dt: fn("abs", cast(v, x.dtype, dt))
    if p == 0:
        return "+", lambda v, dt: cast(binop("!=", v, zero(x.dtype)), DType.BOOL, dt)
    if p == 1:
        return "+", lambda v, dt: fn("abs", cast(v, x.dtype, dt))
    if p == 2:
        return "+", lambda v, dt: binop("*", cast(v, x.dtype, dt), cast(v, x.dtype, dt))
    return "+", lambda v, dt: fn("pow", fn("abs", cast(v, x.dtype, dt)), lit(float(p)))


@LOWERINGS.register("aten.linalg_vector_norm", "aten.norm")
def _norm(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    p = call.arg(1, "ord" if "linalg" in call.target else "p", 2)
    p = 2 if p is None else float(p)
    if call.target.endswith((".Scalar", ".ScalarOpt_dtype")):
        dims, keep = tuple(range(x.rank)), False
    else:
        dims, keep = _dims_arg(call, x, 2, "dim"), bool(call.arg(3, "keepdim", False))
    op, term = _norm_terms(p, x)
    finish: Callable[[Expr, int], Expr] | None = None
    if p == 2:
        finish = lambda acc, _n: fn("sqrt", acc)  # noqa: E731
    elif p not in (0, 1, math.inf, -math.inf):
        finish = lambda acc, _n: fn("pow", acc, lit(1.0 / p))  # noqa: E731
    _simple(ctx, call, dims, keep, op, term, finish)


def _count(
    ctx: LowerCtx, call: OpCall, x: TensorInfo, dims: Sequence[int], keep: bool, *, every: bool
) -> None:
    """``all`` (``every``)/``any`` of ``x != 0`` (`emit_count_reduce`)."""
    out = out0(call)
    if out.dtype != DType.BOOL:
        raise UnsupportedOpError(f"{call.target} with non-bool output")
    rows = _rows(ctx, x, dims)
    raw = x.at(rows.idx)
    truth = raw if x.dtype == DType.BOOL else binop("!=", raw, zero(x.dtype))
    emit_count_reduce(rows, out.at(rows.out_index(keep)), truth, every=every)


def _bool_reduce(every: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x = tensor_arg(call, 0, "self")
        if call.target.endswith(".default"):
            dims, keep = tuple(range(x.rank)), False
        else:
            dims, keep = _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))
        _count(ctx, call, x, dims, keep, every=every)

    return lower


LOWERINGS.register("aten.all")(_bool_reduce(True))
LOWERINGS.register("aten.any")(_bool_reduce(False))


@LOWERINGS.register("aten.count_nonzero")
def _count_nonzero(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims = _dims_arg(call, x, 1, "dim")
    nz = zero(x.dtype)
    _simple(ctx, call, dims, False, "+", lambda v, dt: cast(binop("!=", v, nz), DType.BOOL, dt))


@LOWERINGS.register("aten.logsumexp")
def _logsumexp(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    dims = _dims_arg(call, x, 1, "dim")
    keep = bool(call.arg(2, "keepdim", False))
    rows = _rows(ctx, x, dims)
    dt = accumulate_dtype(out.dtype)
    m, s = rows.local(dt, "m"), rows.local(dt, "s")
    body: list[Stmt] = [
        Assign(m, lit(-math.inf)),
        *rows.over_reduced(Reduce(m, "max", _read(x, rows, dt))),
        # eager replaces an infinite max by 0 so that all -inf rows give -inf, not nan
        Assign(m, sel(binop("==", fn("abs", m), lit(math.inf)), lit(0.0), m)),
        Assign(s, lit(0.0)),
        *rows.over_reduced(Reduce(s, "+", fn("exp", binop("-", _read(x, rows, dt), m)))),
        Assign(out.at(rows.out_index(keep)), binop("+", m, fn("log", s))),
    ]
    rows.emit(body)


def _softmax_like(log: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out = tensor_arg(call, 0, "self"), out0(call)
        dim = norm_dim(call.arg(1, "dim"), x.rank)
        rows = _rows(ctx, x, (dim,) if x.rank else ())
        dt = accumulate_dtype(out.dtype)
        m, s = rows.local(dt, "m"), rows.local(dt, "s")
        tgt = out.at(rows.idx)
        body: list[Stmt] = [
            Assign(m, lit(-math.inf)),
            *rows.over_reduced(Reduce(m, "max", _read(x, rows, dt))),
            Assign(s, lit(0.0)),
        ]
        if log:
            body += [
                *rows.over_reduced(Reduce(s, "+", fn("exp", binop("-", _read(x, rows, dt), m)))),
                Assign(s, binop("+", m, fn("log", s))),
                *rows.over_reduced(Assign(tgt, binop("-", _read(x, rows, dt), s))),
            ]
        else:
            e = rows.full_local(dt, "e")
            body += [
                *rows.over_reduced(
                    Assign(e, fn("exp", binop("-", _read(x, rows, dt), m))), Reduce(s, "+", e)
                ),
                *rows.over_reduced(Assign(tgt, binop("/", e, s))),
            ]
        rows.emit(body)

    return lower


LOWERINGS.register("aten._softmax", "aten.softmax", "aten.special_softmax")(_softmax_like(False))
LOWERINGS.register("aten._log_softmax", "aten.log_softmax", "aten.special_log_softmax")(
    _softmax_like(True)
)
