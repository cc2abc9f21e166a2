"""Lowerings of reductions: sum/mean/prod, max/min (+indices), argmax, var/std, norms,
all/any, count_nonzero, logsumexp, softmax/log_softmax.

Contract: one kernel per call. Loops over the kept dims enclose one or more
reduction passes over the reduced dims (two-pass ops such as ``var``, ``argmax`` and
``softmax`` keep their intermediate per-row values in kernel-local buffers, which are
not DRAM traffic). Accumulation happens in the output type, or in f32 for 16/8-bit
float outputs, as eager kernels do. ``argmax``/``argmin`` return the first index of the
extremum (ties -> lowest index), like torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from solar.frontends.kit import Sink, TensorInfo, UnsupportedOpError, nest, shape_numel
from solar.frontends.pytorch.lowering_utils import (
    accumulate_dtype,
    binop,
    cast,
    fn,
    norm_dim,
    norm_dims,
    out0,
    scalar_lit,
    sel,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Access, Assign, DType, Expr, IntLit, Reduce, ReduceOp, Stmt, lit

__all__ = ["RowNest"]


class RowNest:
    """One kernel over ``in_shape``: kept dims outside, reduction passes inside."""

    def __init__(self, ctx: LowerCtx, x: TensorInfo, dims: Sequence[int], hint: str | None = None):
        self.ctx = ctx
        self.x = x
        self.dims = tuple(dims)
        self.kb: Sink = ctx.kernel(hint)
        self.ivars = ctx.vars(self.kb, x.rank)
        self.kept = [k for k in range(x.rank) if k not in self.dims]
        self.count = shape_numel([x.shape[k] for k in self.dims])

    def read(self, dtype: DType) -> Expr:
        """``x`` at the loop indices, cast to ``dtype``."""
        return cast(LowerCtx.read(self.x, self.ivars), self.x.dtype, dtype)

    def out_index(self, keepdim: bool) -> list[Expr]:
        """Indices of a reduced output (``keepdim`` keeps reduced dims as 0)."""
        out: list[Expr] = []
        for k in range(self.x.rank):
            if k not in self.dims:
                out.append(self.ivars[k])
            elif keepdim:
                out.append(IntLit(0))
        return out

    def write(self, out: TensorInfo, keepdim: bool) -> Access:
        """The store access of a reduced output."""
        return LowerCtx.write(out, self.out_index(keepdim))

    def local(self, dtype: DType, hint: str) -> Access:
        """A per-row kernel-local value (shape of the kept dims)."""
        ref = self.kb.local(dtype, [self.x.shape[k] for k in self.kept], hint)
        return ref[tuple(self.ivars[k] for k in self.kept)] if self.kept else ref.scalar()

    def full_local(self, dtype: DType, hint: str) -> Access:
        """A kernel-local buffer the shape of ``x``."""
        ref = self.kb.local(dtype, self.x.shape, hint)
        return ref[tuple(self.ivars)] if self.x.rank else ref.scalar()

    def over_reduced(self, *stmts: Stmt) -> list[Stmt]:
        """``stmts`` looped over the reduced dims (as is when nothing is reduced)."""
        dims = [(self.ivars[k], self.x.shape[k]) for k in self.dims]
        return nest(dims, stmts)

    def emit(self, body: Sequence[Stmt]) -> None:
        """Wrap ``body`` in the kept loops and append it to the kernel."""
        if self.kept:
            self.kb.emit(*nest([(self.ivars[k], self.x.shape[k]) for k in self.kept], body))
        else:
            self.kb.emit(*body)


def _dims_arg(call: OpCall, x: TensorInfo, pos: int, name: str) -> tuple[int, ...]:
    return norm_dims(call.arg(pos, name), x.rank)


def _simple(
    ctx: LowerCtx,
    call: OpCall,
    dims: Sequence[int],
    keepdim: bool,
    op: ReduceOp,
    init: Callable[[DType], Expr],
    value: Callable[[Expr, DType], Expr],
    finish: Callable[[Expr, int], Expr] | None = None,
) -> None:
    """One reduction ``out = finish(op-reduce of value(x, acc dtype))``."""
    x, out = tensor_arg(call, 0, "self"), out0(call)
    nest = RowNest(ctx, x, dims)
    acc_dt = accumulate_dtype(out.dtype)
    tgt = nest.write(out, keepdim)
    use_local = acc_dt != out.dtype or finish is not None
    acc = nest.local(acc_dt, "acc") if use_local else tgt
    body: list[Stmt] = [
        Assign(acc, init(acc_dt)),
        *nest.over_reduced(Reduce(acc, op, value(nest.read(x.dtype), acc_dt))),
    ]
    if use_local:
        body.append(Assign(tgt, finish(acc, nest.count) if finish is not None else acc))
    nest.emit(body)


def _as(x: TensorInfo) -> Callable[[Expr, DType], Expr]:
    """The element itself, cast to the accumulation type."""
    return lambda v, dt: cast(v, x.dtype, dt)


def _zero(dt: DType) -> Expr:
    return scalar_lit(0, dt) if dt != DType.BOOL else lit(False)


def _one(dt: DType) -> Expr:
    return scalar_lit(1, dt) if dt != DType.BOOL else lit(True)


def _sum_dims(call: OpCall, x: TensorInfo) -> tuple[tuple[int, ...], bool]:
    if call.target.endswith(".default") or (len(call.args) < 2 and "dim" not in call.kwargs):
        return tuple(range(x.rank)), False
    return _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))


@LOWERINGS.register("aten.sum")
def _sum(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims, keep = _sum_dims(call, x)
    _simple(ctx, call, dims, keep, "+", _zero, _as(x))


@LOWERINGS.register("aten.nansum")
def _nansum(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims, keep = _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))
    _simple(
        ctx,
        call,
        dims,
        keep,
        "+",
        _zero,
        lambda v, dt: (
            sel(fn("isnan", v), lit(0.0), cast(v, x.dtype, dt))
            if x.dtype.is_float
            else cast(v, x.dtype, dt)
        ),
    )


@LOWERINGS.register("aten.mean")
def _mean(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims, keep = _sum_dims(call, x)
    _simple(
        ctx, call, dims, keep, "+", _zero, _as(x), lambda acc, n: binop("/", acc, lit(float(n)))
    )


@LOWERINGS.register("aten.prod")
def _prod(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    if call.target.endswith(".default"):
        dims, keep = tuple(range(x.rank)), False
    else:
        dims, keep = (norm_dim(call.arg(1, "dim"), x.rank),), bool(call.arg(2, "keepdim", False))
    _simple(ctx, call, dims, keep, "*", _one, _as(x))


def _extreme_init(op: ReduceOp, dt: DType) -> Expr:
    if dt.is_float:
        return lit(-math.inf) if op == "max" else lit(math.inf)
    if dt == DType.BOOL:
        return lit(op == "min")
    bits = {DType.I8: 7, DType.I32: 31, DType.I64: 63}[dt]
    return lit(-(2**bits)) if op == "max" else lit(2**bits - 1)


def _extreme(op: ReduceOp) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x = tensor_arg(call, 0, "self")
        if call.target.endswith((".dim", ".dim_max", ".dim_min")):
            _extreme_dim(ctx, call, op)
            return
        if call.target.endswith(".default") and call.op in ("max", "min"):
            dims, keep = tuple(range(x.rank)), False
        else:
            dims, keep = _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))
        _simple(ctx, call, dims, keep, op, lambda dt: _extreme_init(op, dt), _as(x))

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
    nest = RowNest(ctx, x, dims)
    lo, hi = nest.write(lo_out, keep), nest.write(hi_out, keep)
    value = nest.read(lo_out.dtype)
    nest.emit(
        [
            Assign(lo, _extreme_init("min", lo_out.dtype)),
            Assign(hi, _extreme_init("max", hi_out.dtype)),
            *nest.over_reduced(Reduce(lo, "min", value), Reduce(hi, "max", value)),
        ]
    )


def _extreme_dim(ctx: LowerCtx, call: OpCall, op: ReduceOp) -> None:
    """``max.dim``/``min.dim``: values and first index of the extremum."""
    x = tensor_arg(call, 0, "self")
    dim = norm_dim(call.arg(1, "dim"), x.rank)
    keep = bool(call.arg(2, "keepdim", False))
    values, indices = call.outputs[0], call.outputs[1]
    _arg_extreme(ctx, x, (dim,), keep, op, values, indices)


def _arg_extreme(
    ctx: LowerCtx,
    x: TensorInfo,
    dims: tuple[int, ...],
    keep: bool,
    op: ReduceOp,
    values: TensorInfo | None,
    indices: TensorInfo | None,
) -> None:
    nest = RowNest(ctx, x, dims)
    dt = x.dtype
    best = nest.local(dt, "best")
    body: list[Stmt] = [
        Assign(best, _extreme_init(op, dt)),
        *nest.over_reduced(Reduce(best, op, nest.read(dt))),
    ]
    if values is not None:
        body.append(Assign(nest.write(values, keep), best))
    if indices is not None:
        lin: Expr = IntLit(0)
        for k in dims:
            lin = (
                binop("+", binop("*", lin, IntLit(x.shape[k])), nest.ivars[k])
                if not (isinstance(lin, IntLit) and lin.value == 0)
                else nest.ivars[k]
            )
        tgt = nest.write(indices, keep)
        # The first index holding the extremum (torch's tie rule). Rows containing NaN
        # (which torch reports as the extremum) are not modelled: 3 FLOPs per element
        # keep the count at or below eager's comparator.
        hit = binop("==", nest.read(dt), best)
        body += [
            Assign(tgt, IntLit(nest.count)),
            *nest.over_reduced(Reduce(tgt, "min", sel(hit, lin, IntLit(nest.count)))),
        ]
    nest.emit(body)


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
        nest = RowNest(ctx, x, dims)
        dt = accumulate_dtype(out.dtype)
        mean, m2 = nest.local(dt, "mean"), nest.local(dt, "m2")
        dev = nest.full_local(dt, "dev")  # x - mean, computed once per element
        denom = max(nest.count - _correction(call), 0.0)
        var = binop("/", m2, lit(float(denom)))
        body: list[Stmt] = [
            Assign(mean, _zero(dt)),
            *nest.over_reduced(Reduce(mean, "+", nest.read(dt))),
            Assign(mean, binop("/", mean, lit(float(nest.count)))),
            Assign(m2, _zero(dt)),
            *nest.over_reduced(
                Assign(dev, binop("-", nest.read(dt), mean)), Reduce(m2, "+", binop("*", dev, dev))
            ),
            Assign(nest.write(out, keep), fn("sqrt", var) if root else var),
        ]
        if with_mean and len(call.outputs) > 1 and call.outputs[1] is not None:
            body.append(Assign(nest.write(call.outputs[1], keep), mean))
        nest.emit(body)

    return lower


LOWERINGS.register("aten.var")(_moments(False, False))
LOWERINGS.register("aten.std")(_moments(True, False))
LOWERINGS.register("aten.var_mean")(_moments(False, True))
LOWERINGS.register("aten.std_mean")(_moments(True, True))


@LOWERINGS.register("aten.linalg_vector_norm", "aten.norm")
def _norm(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    p = call.arg(1, "ord" if "linalg" in call.target else "p", 2)
    p = 2 if p is None else p
    if call.target.endswith((".Scalar", ".ScalarOpt_dtype")):
        dims, keep = tuple(range(x.rank)), False
    else:
        dims, keep = _dims_arg(call, x, 2, "dim"), bool(call.arg(3, "keepdim", False))
    if p == math.inf or p == -math.inf:
        op: ReduceOp = "max" if p > 0 else "min"
        _simple(
            ctx,
            call,
            dims,
            keep,
            op,
            lambda dt: _extreme_init(op, dt),
            lambda v, dt: fn("abs", cast(v, x.dtype, dt)),
        )
    elif p == 0:
        _simple(
            ctx,
            call,
            dims,
            keep,
            "+",
            _zero,
            lambda v, dt: cast(binop("!=", v, scalar_lit(0, x.dtype)), DType.BOOL, dt),
        )
    elif p == 1:
        _simple(ctx, call, dims, keep, "+", _zero, lambda v, dt: fn("abs", cast(v, x.dtype, dt)))
    elif p == 2:
        _simple(
            ctx,
            call,
            dims,
            keep,
            "+",
            _zero,
            lambda v, dt: binop("*", cast(v, x.dtype, dt), cast(v, x.dtype, dt)),
            lambda acc, _n: fn("sqrt", acc),
        )
    else:
        pf = float(p)
        _simple(
            ctx,
            call,
            dims,
            keep,
            "+",
            _zero,
            lambda v, dt: fn("pow", fn("abs", cast(v, x.dtype, dt)), lit(pf)),
            lambda acc, _n: fn("pow", acc, lit(1.0 / pf)),
        )


def _bool_reduce(op: ReduceOp) -> Callable[[LowerCtx, OpCall], None]:
    """``all``/``any``: ``min=``/``max=`` over 0/1 in a kernel-local i8 (the IR has no
    boolean reductions), stored as a bool."""

    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out = tensor_arg(call, 0, "self"), out0(call)
        if call.target.endswith(".default"):
            dims, keep = tuple(range(x.rank)), False
        else:
            dims, keep = _dims_arg(call, x, 1, "dim"), bool(call.arg(2, "keepdim", False))
        if out.dtype != DType.BOOL:
            raise UnsupportedOpError(f"{call.target} with non-bool output")
        nest = RowNest(ctx, x, dims)
        acc = nest.local(DType.I8, "acc")
        raw = nest.read(x.dtype)
        truth = raw if x.dtype == DType.BOOL else binop("!=", raw, scalar_lit(0, x.dtype))
        nest.emit(
            [
                Assign(acc, IntLit(1 if op == "min" else 0)),
                *nest.over_reduced(Reduce(acc, op, cast(truth, DType.BOOL, DType.I8))),
                Assign(nest.write(out, keep), binop("!=", acc, IntLit(0))),
            ]
        )

    return lower


LOWERINGS.register("aten.all")(_bool_reduce("min"))
LOWERINGS.register("aten.any")(_bool_reduce("max"))


@LOWERINGS.register("aten.count_nonzero")
def _count_nonzero(ctx: LowerCtx, call: OpCall) -> None:
    x = tensor_arg(call, 0, "self")
    dims = _dims_arg(call, x, 1, "dim")
    zero = scalar_lit(0, x.dtype) if x.dtype != DType.BOOL else lit(False)
    _simple(
        ctx, call, dims, False, "+", _zero, lambda v, dt: cast(binop("!=", v, zero), DType.BOOL, dt)
    )


@LOWERINGS.register("aten.logsumexp")
def _logsumexp(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    dims = _dims_arg(call, x, 1, "dim")
    keep = bool(call.arg(2, "keepdim", False))
    nest = RowNest(ctx, x, dims)
    dt = accumulate_dtype(out.dtype)
    m, s = nest.local(dt, "m"), nest.local(dt, "s")
    body: list[Stmt] = [
        Assign(m, lit(-math.inf)),
        *nest.over_reduced(Reduce(m, "max", nest.read(dt))),
        # eager replaces an infinite max by 0 so that all -inf rows give -inf, not nan
        Assign(m, sel(binop("==", fn("abs", m), lit(math.inf)), lit(0.0), m)),
        Assign(s, lit(0.0)),
        *nest.over_reduced(Reduce(s, "+", fn("exp", binop("-", nest.read(dt), m)))),
        Assign(nest.write(out, keep), binop("+", m, fn("log", s))),
    ]
    nest.emit(body)


def _softmax_like(log: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out = tensor_arg(call, 0, "self"), out0(call)
        dim = norm_dim(call.arg(1, "dim"), x.rank)
        nest = RowNest(ctx, x, (dim,) if x.rank else ())
        dt = accumulate_dtype(out.dtype)
        m, s = nest.local(dt, "m"), nest.local(dt, "s")
        tgt = LowerCtx.write(out, nest.ivars)
        body: list[Stmt] = [
            Assign(m, lit(-math.inf)),
            *nest.over_reduced(Reduce(m, "max", nest.read(dt))),
            Assign(s, lit(0.0)),
        ]
        if log:
            body += [
                *nest.over_reduced(Reduce(s, "+", fn("exp", binop("-", nest.read(dt), m)))),
                Assign(s, binop("+", m, fn("log", s))),
                *nest.over_reduced(Assign(tgt, binop("-", nest.read(dt), s))),
            ]
        else:
            e = nest.full_local(dt, "e")
            body += [
                *nest.over_reduced(
                    Assign(e, fn("exp", binop("-", nest.read(dt), m))), Reduce(s, "+", e)
                ),
                *nest.over_reduced(Assign(tgt, binop("/", e, s))),
            ]
        nest.emit(body)

    return lower


LOWERINGS.register("aten._softmax", "aten.softmax", "aten.special_softmax")(_softmax_like(False))
LOWERINGS.register("aten._log_softmax", "aten.log_softmax", "aten.special_log_softmax")(
    _softmax_like(True)
)
