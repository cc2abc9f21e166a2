"""Lowerings of reductions, arg-reductions, cumulative scans and pooling gradients.

Contract: ``EqnCtx -> None``; each equation emits one kernel:

* ``reduce_sum/max/min/prod``: ``out = init; out op= x`` over the reduced axes
  (16/8-bit float outputs accumulate in an f32 kernel-local, as XLA does), the same
  structure as the PyTorch frontend's reductions, so both count the same FLOPs.
  ``reduce_and/or`` on bools count the true elements (``cnt += i64(x)``) and compare.
  Over size-1 axes only, ``reduce_sum/max/min/prod`` is a free view (a squeeze).
* ``argmax``/``argmin``: the extreme value into a local, then the first index that
  attains it (``if x == m { out min= i }``): two passes, one kernel.
* ``cumsum/cumprod/cummax/cummin/cumlogsumexp``: ``seq`` recurrences over the scanned
  axis (innermost), honouring ``reverse``.
* ``select_and_scatter_add``: the gradient of max/min pooling (``reduce_window`` itself
  is ops_pool.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

from solar.frontends.jaxfe.core import EqnOperand, Lit, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import Nest, TensorInfo, UnsupportedOpError, const_int, guard, range_guard
from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    Cast,
    DType,
    Expr,
    For,
    If,
    IntLit,
    Reduce,
    ReduceOp,
    Stmt,
    Unary,
    lit,
)

__all__ = ["reduce_init"]

_LOW = frozenset({DType.F16, DType.BF16, DType.F8E4M3, DType.F8E5M2})
_INT_MIN = {DType.I8: -(2**7), DType.I32: -(2**31), DType.I64: -(2**63)}
_INT_MAX = {DType.I8: 2**7 - 1, DType.I32: 2**31 - 1, DType.I64: 2**63 - 1}


def reduce_init(op: str, dtype: DType) -> Expr:
    """The identity of reduction ``op`` in ``dtype``.

    >>> from solar.ir import print_expr
    >>> print_expr(reduce_init("max", DType.F32)), print_expr(reduce_init("+", DType.I32))
    ('-inf', '0')
    """
    if dtype == DType.BOOL:
        return lit(op == "min" or op == "*")
    if op == "+":
        return lit(0.0) if dtype.is_float else lit(0)
    if op == "*":
        return lit(1.0) if dtype.is_float else lit(1)
    if op == "max":
        return lit(-math.inf) if dtype.is_float else lit(_INT_MIN[dtype])
    return lit(math.inf) if dtype.is_float else lit(_INT_MAX[dtype])


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
    emit_reduce(ctx, x, axes, op, lambda idx: read(x, idx))
    return None


def emit_reduce(
    ctx: EqnCtx,
    x: EqnOperand,
    axes: Sequence[int],
    op: ReduceOp,
    value: Callable[[Sequence[Expr]], Expr],
) -> None:
    """One kernel ``out[kept] = init; out[kept] op= value(idx)`` over ``axes`` of ``x``."""
    dtype = ctx.out_dtype(0)
    out = ctx.out(0)
    kb = ctx.kernel()
    in_shape = x.shape
    kept = [k for k in range(len(in_shape)) if k not in axes]
    outer = Nest(kb, [in_shape[k] for k in kept])
    inner = Nest(kb, [in_shape[k] for k in axes])
    if outer.empty:
        return
    idx: list[Expr] = [IntLit(0)] * len(in_shape)
    for pos, k in enumerate(kept):
        idx[k] = outer.idx[pos]
    for pos, k in enumerate(axes):
        idx[k] = inner.idx[pos]
    tgt = Access(out.ref.name, out.storage_index(outer.idx))
    init = reduce_init(op, dtype)
    if dtype in _LOW:
        acc_t = kb.local(DType.F32, [in_shape[k] for k in kept], "acc")
        acc = acc_t[tuple(outer.idx)] if kept else acc_t.scalar()
        body: list[Stmt] = [
            Assign(acc, reduce_init(op, DType.F32)),
            *([] if inner.empty else inner.wrap([Reduce(acc, op, value(idx))])),
            Assign(tgt, acc),
        ]
    else:
        body = [Assign(tgt, init)]
        if not inner.empty:
            body += inner.wrap([Reduce(tgt, op, value(idx))])
    kb.emit(*outer.wrap(body))


def _emit_bool_reduce(ctx: EqnCtx, x: EqnOperand, axes: Sequence[int], *, every: bool) -> None:
    """``all``/``any``: count the true elements into an i64 local, then compare (1 FLOP each)."""
    out = ctx.out(0)
    kb = ctx.kernel()
    shape = x.shape
    kept = [k for k in range(len(shape)) if k not in axes]
    outer = Nest(kb, [shape[k] for k in kept])
    inner = Nest(kb, [shape[k] for k in axes])
    if outer.empty:
        return
    idx: list[Expr] = [IntLit(0)] * len(shape)
    for pos, k in enumerate(kept):
        idx[k] = outer.idx[pos]
    for pos, k in enumerate(axes):
        idx[k] = inner.idx[pos]
    n = 1
    for k in axes:
        n *= shape[k]
    cnt_t = kb.local(DType.I64, [e for _, e in outer.dims], "count")
    cnt = cnt_t[tuple(v for v, _ in outer.dims)] if outer.dims else cnt_t.scalar()
    body: list[Stmt] = [Assign(cnt, IntLit(0))]
    if not inner.empty:
        body += inner.wrap([Reduce(cnt, "+", Cast(DType.I64, read(x, idx)))])
    test = Binary("==", cnt, lit(n)) if every else Binary(">", cnt, IntLit(0))
    body.append(Assign(Access(out.ref.name, out.storage_index(outer.idx)), test))
    kb.emit(*outer.wrap(body))


@LOWERINGS.register("argmax", "argmin")
def _argextreme(ctx: EqnCtx) -> None:
    x = ctx.ins[0]
    axes = tuple(int(a) for a in ctx.params["axes"])
    if len(axes) != 1:
        raise UnsupportedOpError("argmax/argmin over several axes")
    (axis,) = axes
    op: ReduceOp = "max" if ctx.prim == "argmax" else "min"
    out = ctx.out(0)
    kb = ctx.kernel()
    shape = x.shape
    kept = [k for k in range(len(shape)) if k != axis]
    outer = Nest(kb, [shape[k] for k in kept])
    if outer.empty:
        return
    r1, r2 = kb.fresh_vars(2, "r")
    n = shape[axis]

    def at(r: Expr) -> list[Expr]:
        idx: list[Expr] = [IntLit(0)] * len(shape)
        for pos, k in enumerate(kept):
            idx[k] = outer.idx[pos]
        idx[axis] = r
        return idx

    # max=/min= are not defined on bools (E0213): a bool operand (jnp.select's argmax
    # over its stacked conditions) is compared as 0/1 integers.
    vdt = DType.I32 if x.dtype == DType.BOOL else x.dtype

    def value(r: Expr) -> Expr:
        v = read(x, at(r))
        return Cast(vdt, v) if vdt != x.dtype else v

    def attains(r: Expr) -> Expr:
        # JAX's argmax/argmin return the first NaN when there is one (the extreme is then
        # NaN, which equals nothing): a NaN candidate attains it too.
        hit = Binary("==", value(r), m)
        return Binary("or", hit, Binary("!=", value(r), value(r))) if vdt.is_float else hit

    m_t = kb.local(vdt, [shape[k] for k in kept], "m")
    m = m_t[tuple(outer.idx)] if kept else m_t.scalar()
    tgt = Access(out.ref.name, out.storage_index(outer.idx))
    body: list[Stmt] = [
        Assign(m, reduce_init(op, vdt)),
        For(r1.name, IntLit(0), lit(n), (Reduce(m, op, value(r1)),)),
        # The first index attaining the extreme (every candidate is <= n - 1).
        Assign(tgt, lit(n - 1)),
        For(
            r2.name,
            IntLit(0),
            lit(n),
            (If(attains(r2), (Reduce(tgt, "min", r2),)),),
        ),
    ]
    kb.emit(*outer.wrap(body))


_CUM: dict[str, Callable[[Expr, Expr], Expr]] = {
    "cumsum": lambda a, b: Binary("+", a, b),
    "cumprod": lambda a, b: Binary("*", a, b),
    "cummax": lambda a, b: Call("max", (a, b)),
    "cummin": lambda a, b: Call("min", (a, b)),
    "cumlogsumexp": lambda a, b: _logaddexp(a, b),
}


def _logaddexp(a: Expr, b: Expr) -> Expr:
    """``max(a, b) + log1p(exp(-abs(a - b)))`` (7 FLOPs, overflow-free)."""
    gap = Unary("-", Call("abs", (Binary("-", a, b),)))
    return Binary("+", Call("max", (a, b)), Call("log1p", (Call("exp", (gap,)),)))


@LOWERINGS.register(*_CUM)
def _cumulative(ctx: EqnCtx) -> None:
    x = ctx.ins[0]
    axis = int(ctx.params["axis"])
    reverse = bool(ctx.params.get("reverse", False))
    combine = _CUM[ctx.prim]
    out = ctx.out(0)
    kb = ctx.kernel()
    shape = ctx.out_shape(0)
    n = shape[axis]
    others = [k for k in range(len(shape)) if k != axis]
    outer = Nest(kb, [shape[k] for k in others])
    if outer.empty or n == 0:
        return

    def at(pos: Expr) -> list[Expr]:
        idx: list[Expr] = [IntLit(0)] * len(shape)
        for p, k in enumerate(others):
            idx[k] = outer.idx[p]
        idx[axis] = pos
        return idx

    first = lit(n - 1) if reverse else IntLit(0)
    body: list[Stmt] = [
        Assign(Access(out.ref.name, out.storage_index(at(first))), read(x, at(first)))
    ]
    if n > 1:
        (i,) = kb.fresh_vars(1, "t")
        cur = Binary("-", lit(n - 1), i) if reverse else i
        prev = Binary("-", lit(n), i) if reverse else Binary("-", i, IntLit(1))
        stmt = Assign(
            Access(out.ref.name, out.storage_index(at(cur))),
            combine(read(out, at(prev)), read(x, at(cur))),
        )
        body.append(For(i.name, IntLit(1), lit(n), (stmt,), seq=True))
    kb.emit(*outer.wrap(body))


_SELECT_OPS: dict[str, str] = {"ge": ">", "gt": ">", "le": "<", "lt": "<"}


@LOWERINGS.register("select_and_scatter_add")
def _select_and_scatter_add(ctx: EqnCtx) -> None:
    """The gradient of max/min pooling: each window's source value is added at the
    window's first extreme tap.

    One kernel: zero the result; per window, a ``seq`` walk over the in-bounds taps
    keeps the running extreme and its tap (``if x > m { m = x; a = tap }``: one compare
    per tap, the value-guarded updates count 0), then ``res[window start + a] += source``
    (one FLOP per window). That is XLA's select-and-scatter: a select per tap, a
    scatter per window.
    """
    src, x = ctx.ins
    p = ctx.params
    cmp = _SELECT_OPS.get(getattr(p["select_prim"], "name", str(p["select_prim"])))
    if cmp is None or not isinstance(x, TensorInfo) or not ctx.out_dtype(0).is_float:
        raise UnsupportedOpError("select_and_scatter_add with a select other than ge/le")
    nd = len(x.shape)
    win = tuple(int(v) for v in p["window_dimensions"])
    strides = tuple(int(v) for v in p["window_strides"])
    pads = tuple((int(a), int(b)) for a, b in p["padding"])
    o_shape = src.shape
    for d in range(nd):
        for o in range(o_shape[d]):
            if not any(0 <= o * strides[d] + w - pads[d][0] < x.shape[d] for w in range(win[d])):
                raise UnsupportedOpError("select_and_scatter_add with a window entirely in padding")
    out = ctx.out(0)
    kb = ctx.kernel()
    full = Nest(kb, x.shape)
    if full.empty:
        return
    kb.emit(*full.wrap([Assign(Access(out.ref.name, out.storage_index(full.idx)), lit(0.0))]))
    outer = Nest(kb, o_shape, "o")
    if outer.empty:
        return
    m_t = kb.local(x.dtype, o_shape, "m")
    a_t = kb.local(DType.I64, o_shape, "a")
    m, a = m_t[tuple(outer.idx)], a_t[tuple(outer.idx)]
    place = [math.prod(win[d + 1 :]) for d in range(nd)]
    taps = Nest(kb, win, "w")
    conds: list[Expr] = []
    where: list[Expr] = []
    linear: Expr | None = None
    for d in range(nd):
        pos = outer.aff(d, strides[d]).plus(taps.aff(d)).plus(-pads[d][0])
        conds += range_guard(pos, x.shape[d])
        where.append(pos.expr())
        if win[d] > 1:
            term = taps.idx[d] if place[d] == 1 else Binary("*", lit(place[d]), taps.idx[d])
            linear = term if linear is None else Binary("+", linear, term)
    value = read(x, where)
    update = If(Binary(cmp, value, m), (Assign(m, value), Assign(a, linear or IntLit(0))))
    walk = [_seq_all(s) for s in taps.wrap(guard(conds, [update]))]
    dst: list[Expr] = []
    for d in range(nd):
        start = outer.aff(d, strides[d]).plus(-pads[d][0]).expr()
        if win[d] == 1:
            dst.append(start)
            continue
        tap: Expr = a if place[d] == 1 else Binary("//", a, lit(place[d]))
        if any(w > 1 for w in win[:d]):
            tap = Binary("%", tap, lit(win[d]))
        dst.append(tap if const_int(start) == 0 else Binary("+", start, tap))
    init = lit(-math.inf) if cmp == ">" else lit(math.inf)
    body: list[Stmt] = [
        Assign(m, init),
        Assign(a, lit(math.prod(win) - 1)),
        *walk,
        Reduce(Access(out.ref.name, out.storage_index(dst)), "+", read(src, outer.idx)),
    ]
    kb.emit(*outer.wrap(body))


def _seq_all(s: Stmt) -> Stmt:
    """``s`` with every ``for`` in it made sequential (a running extreme is ordered)."""
    if isinstance(s, For):
        return dataclasses.replace(s, seq=True, body=tuple(_seq_all(b) for b in s.body))
    if isinstance(s, If):
        return dataclasses.replace(s, body=tuple(_seq_all(b) for b in s.body))
    return s
