"""Lowerings of ATen loss ops (NLL, MSE, L1, smooth L1, Huber, BCE, margins, KL): one kernel each.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel. ``reduction`` is
torch's enum (0 none, 1 mean, 2 sum): ``none`` writes the elementwise loss, ``sum`` and
``mean`` accumulate into the rank-0 output (through an f32 local for 16-bit dtypes).
NLL losses gather ``X[n, T[n], ...]`` and ``weight[T[n]]`` (indirect subscripts) under
a value-dependent guard ``T[n] != ignore_index``, and also write ``total_weight``.

CPU dispatch (torch 2.13): ``F.cross_entropy`` reaches ``_log_softmax`` +
``nll_loss_forward`` (``nll_loss2d_forward`` for inputs with spatial dims; label
smoothing and probability targets add elementwise/reduction ops); ``F.mse_loss``,
``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy(_with_logits)``,
``soft_margin_loss`` and ``multi_margin_loss`` arrive as themselves. ``F.l1_loss``,
``kl_div``, ``hinge_embedding_loss``, ``margin_ranking_loss``, ``cosine_embedding_loss``,
``triplet_margin_loss``, ``cosine_similarity``, ``poisson_nll_loss`` and
``gaussian_nll_loss`` decompose into elementwise ops, reductions and norms before
dispatch (the composite ``l1_loss`` and ``kl_div`` are registered here as well).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    fmax,
    fmin,
    nest,
)
from solar.frontends.pytorch.lowering_utils import bcast_read, elementwise, operand
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Access, Assign, Binary, Call, DType, Expr, If, Name, Reduce, Stmt, Unary, lit

__all__: list[str] = []

_NONE, _MEAN, _SUM = 0, 1, 2


def _bin(op: str, a: Expr, b: Expr) -> Expr:
    return Binary(op, a, b)


def _f(x: float) -> Expr:
    return lit(float(x))


def _out(call: OpCall) -> TensorInfo:
    out = call.outputs[0]
    if out is None:
        raise UnsupportedOpError(f"{call.target}: no output declared")
    return out


def _reduced(
    ctx: LowerCtx,
    kb: Sink,
    out: TensorInfo,
    shape: Sequence[int],
    reduction: int,
    value: Callable[[list[Expr]], Expr],
    *,
    stage: Callable[[list[Expr]], Expr] | None = None,
) -> None:
    """``out = value`` elementwise (none), or its sum / mean into the rank-0 ``out``.

    With ``stage``, ``value`` receives the element of a kernel-local holding
    ``stage(idx)`` (a subexpression the loss uses more than once is computed once).
    """
    nst = Nest(kb, shape, "i")
    acc_dtype = accumulate_dtype(out.dtype)
    pre: list[Stmt] = []
    val = value(nst.idx)
    if stage is not None:
        tmp = kb.local(acc_dtype, shape, "diff")
        at = tmp[tuple(nst.idx)] if shape else tmp.scalar()
        pre = [Assign(at, stage(nst.idx))]
        val = value([at])
    if reduction == _NONE:
        kb.emit(*nst.wrap([*pre, Assign(ctx.write(out, nst.idx), val)]))
        return
    if reduction not in (_MEAN, _SUM):
        raise UnsupportedOpError(f"unknown reduction {reduction}")
    direct = acc_dtype == out.dtype
    acc: Access = ctx.write(out, []) if direct else kb.local(acc_dtype, [], "acc").scalar()
    count = 1
    for d in shape:
        count *= d
    kb.emit(Assign(acc, _f(0.0)), *nst.wrap([*pre, Reduce(acc, "+", val)]))
    if reduction == _MEAN:
        kb.emit(Assign(ctx.write(out, []), _bin("/", acc, _f(float(count)))))
    elif not direct:
        kb.emit(Assign(ctx.write(out, []), acc))


def _pair(call: OpCall) -> tuple[TensorInfo, TensorInfo, TensorInfo]:
    x, t = call.arg(0, "self"), call.arg(1, "target")
    if not isinstance(x, TensorInfo) or not isinstance(t, TensorInfo):
        raise UnsupportedOpError(f"{call.target}: tensor input and target expected")
    return x, t, _out(call)


def _shape(*ts: TensorInfo) -> tuple[int, ...]:
    rank = max(t.rank for t in ts)
    shape = [1] * rank
    for t in ts:
        for k, d in enumerate(t.shape):
            pos = rank - t.rank + k
            if d != 1:
                shape[pos] = d
    return tuple(shape)


def _elementwise_loss(
    name: str,
    fn: Callable[[OpCall, Expr], Expr],
    stage: Callable[[Expr, Expr], Expr] = lambda x, t: Binary("-", x, t),
) -> Callable[[LowerCtx, OpCall], None]:
    """A loss ``fn(call, stage(x, t))`` of one staged value per element."""

    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, t, out = _pair(call)
        shape = _shape(x, t)
        acc = accumulate_dtype(out.dtype)
        kb = ctx.kernel(name)

        def staged(idx: list[Expr]) -> Expr:
            xv = cast(bcast_read(x, idx, shape), x.dtype, acc)
            tv = cast(bcast_read(t, idx, shape), t.dtype, acc)
            return stage(xv, tv)

        _reduced(
            ctx,
            kb,
            out,
            shape,
            int(call.arg(2, "reduction", _MEAN)),
            lambda idx: fn(call, idx[0]),
            stage=staged,
        )

    return lower


def _mse(_c: OpCall, d: Expr) -> Expr:
    return _bin("*", d, d)


def _l1(_c: OpCall, z: Expr) -> Expr:
    return z


def _smooth_l1(c: OpCall, z: Expr) -> Expr:
    beta = float(c.arg(3, "beta", 1.0))
    if beta == 0.0:
        return z
    quad = _bin("/", _bin("*", _f(0.5), _bin("*", z, z)), _f(beta))
    return Call("select", (_bin("<", z, _f(beta)), quad, _bin("-", z, _f(0.5 * beta))))


def _huber(c: OpCall, z: Expr) -> Expr:
    delta = float(c.arg(3, "delta", 1.0))
    quad = _bin("*", _f(0.5), _bin("*", z, z))
    return Call(
        "select",
        (_bin("<", z, _f(delta)), quad, _bin("*", _f(delta), _bin("-", z, _f(0.5 * delta)))),
    )


def _abs_diff(x: Expr, t: Expr) -> Expr:
    return Call("abs", (_bin("-", x, t),))


def _soft_margin(_c: OpCall, z: Expr) -> Expr:
    return Call("log1p", (Call("exp", (Unary("-", z),)),))


def _kl_div(c: OpCall, z: Expr) -> Expr:
    return z


def _kl_term(log_target: bool) -> Callable[[Expr, Expr], Expr]:
    def term(x: Expr, t: Expr) -> Expr:
        if log_target:
            return _bin("*", Call("exp", (t,)), _bin("-", t, x))
        # xlogy(t, t) - t * x, with 0 * log(0) = 0
        xlogy = Call("select", (_bin("==", t, _f(0.0)), _f(0.0), _bin("*", t, Call("log", (t,)))))
        return _bin("-", xlogy, _bin("*", t, x))

    return term


LOWERINGS.register("aten.mse_loss.default")(_elementwise_loss("mse_loss", _mse))
LOWERINGS.register("aten.l1_loss.default")(_elementwise_loss("l1_loss", _l1, _abs_diff))
LOWERINGS.register("aten.smooth_l1_loss.default")(
    _elementwise_loss("smooth_l1_loss", _smooth_l1, _abs_diff)
)
LOWERINGS.register("aten.huber_loss.default")(_elementwise_loss("huber_loss", _huber, _abs_diff))
LOWERINGS.register("aten.soft_margin_loss.default")(
    _elementwise_loss("soft_margin_loss", _soft_margin, lambda x, t: _bin("*", t, x))
)


@LOWERINGS.register("aten.kl_div.default")
def _kl_div_op(ctx: LowerCtx, call: OpCall) -> None:
    """``kl_div(self, target, reduction=mean, *, log_target=False)`` (pointwise KL terms)."""
    log_target = bool(call.kwargs.get("log_target", call.arg(3, "log_target", False)))
    _elementwise_loss("kl_div", _kl_div, _kl_term(log_target))(ctx, call)


def _opt_read(t: object, idx: list[Expr], shape: Sequence[int], acc: DType) -> Expr | None:
    if not isinstance(t, TensorInfo):
        return None
    return cast(bcast_read(t, idx, shape), t.dtype, acc)


@LOWERINGS.register("aten.binary_cross_entropy.default")
def _bce(ctx: LowerCtx, call: OpCall) -> None:
    """``binary_cross_entropy(self, target, weight=None, reduction=mean)``; logs clamp at -100."""
    x, t, out = _pair(call)
    shape = _shape(x, t)
    acc = accumulate_dtype(out.dtype)
    kb = ctx.kernel("binary_cross_entropy")

    def value(idx: list[Expr]) -> Expr:
        xv, tv = (
            cast(bcast_read(x, idx, shape), x.dtype, acc),
            cast(bcast_read(t, idx, shape), t.dtype, acc),
        )
        lx = fmax(Call("log", (xv,)), _f(-100.0))
        l1x = fmax(Call("log", (_bin("-", _f(1.0), xv),)), _f(-100.0))
        loss = _bin("-", _bin("*", _bin("-", tv, _f(1.0)), l1x), _bin("*", tv, lx))
        w = _opt_read(call.arg(2, "weight"), idx, shape, acc)
        return _bin("*", w, loss) if w is not None else loss

    _reduced(ctx, kb, out, shape, int(call.arg(3, "reduction", _MEAN)), value)


@LOWERINGS.register("aten.binary_cross_entropy_with_logits.default")
def _bce_logits(ctx: LowerCtx, call: OpCall) -> None:
    """``(self, target, weight=None, pos_weight=None, reduction=mean)``.

    ``loss = (1 - t) * x - lw * log_sigmoid(x)`` with ``lw = (pos_weight - 1) * t + 1``
    and ``log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))``, as torch computes it.
    """
    x, t, out = _pair(call)
    shape = _shape(x, t)
    acc = accumulate_dtype(out.dtype)
    kb = ctx.kernel("binary_cross_entropy_with_logits")

    def value(idx: list[Expr]) -> Expr:
        xv, tv = (
            cast(bcast_read(x, idx, shape), x.dtype, acc),
            cast(bcast_read(t, idx, shape), t.dtype, acc),
        )
        log_sig = _bin(
            "-", fmin(xv, _f(0.0)), Call("log1p", (Call("exp", (Unary("-", Call("abs", (xv,))),)),))
        )
        pw = _opt_read(call.arg(3, "pos_weight"), idx, shape, acc)
        if pw is not None:
            log_sig = _bin("*", _bin("+", _bin("*", _bin("-", pw, _f(1.0)), tv), _f(1.0)), log_sig)
        loss = _bin("-", _bin("*", _bin("-", _f(1.0), tv), xv), log_sig)
        w = _opt_read(call.arg(2, "weight"), idx, shape, acc)
        return _bin("*", w, loss) if w is not None else loss

    _reduced(ctx, kb, out, shape, int(call.arg(4, "reduction", _MEAN)), value)


@LOWERINGS.register(
    "aten.nll_loss_forward.default",
    "aten.nll_loss2d_forward.default",
    "aten.nll_loss.default",
    "aten.nll_loss_nd.default",
    "aten.nll_loss2d.default",
)
def _nll_loss(ctx: LowerCtx, call: OpCall) -> None:
    """``nll_loss_forward(self, target, weight, reduction, ignore_index) -> (out, total_weight)``.

    ``self`` is ``[C]``, ``[N, C]`` or ``[N, C, *d]``; ``target`` drops the class dim.
    """
    x, t, out = _pair(call)
    weight = call.arg(2, "weight")
    reduction = int(call.arg(3, "reduction", _MEAN))
    ignore = int(call.arg(4, "ignore_index", -100))
    total = call.outputs[1] if len(call.outputs) > 1 else None
    if x.rank == 0 or t.rank != max(x.rank - 1, 0):
        raise UnsupportedOpError("nll_loss: target must drop the class dim of the input")
    acc = accumulate_dtype(out.dtype)
    kb = ctx.kernel("nll_loss")
    nst = Nest(kb, t.shape, "i")
    tgt = ctx.read(t, nst.idx)
    class_dim = 0 if x.rank == 1 else 1
    xi = list(nst.idx)
    xi.insert(class_dim, tgt)
    xv = cast(ctx.read(x, xi), x.dtype, acc)
    w = cast(ctx.read(weight, [tgt]), weight.dtype, acc) if isinstance(weight, TensorInfo) else None
    picked = _bin("*", w, xv) if w is not None else xv
    keep = _bin("!=", tgt, lit(ignore))
    if reduction == _NONE:
        body: list[Stmt] = [
            Assign(ctx.write(out, nst.idx), _f(0.0)),
            If(keep, (Assign(ctx.write(out, nst.idx), Unary("-", picked)),)),
        ]
        kb.emit(*nst.wrap(body))
        if total is not None:
            kb.emit(Assign(ctx.write(total, []), _f(0.0)))
        return
    s = kb.local(acc, [], "loss_sum").scalar()
    tw = kb.local(acc, [], "weight_sum").scalar()
    kb.emit(
        Assign(s, _f(0.0)),
        Assign(tw, _f(0.0)),
        *nst.wrap(
            [If(keep, (Reduce(s, "+", picked), Reduce(tw, "+", w if w is not None else _f(1.0))))]
        ),
        Assign(ctx.write(out, []), Unary("-", _bin("/", s, tw) if reduction == _MEAN else s)),
    )
    if total is not None:
        kb.emit(Assign(ctx.write(total, []), tw))


@LOWERINGS.register("aten.multi_margin_loss.default")
def _multi_margin(ctx: LowerCtx, call: OpCall) -> None:
    """``multi_margin_loss(self, target, p=1, margin=1, weight=None, reduction=mean)``.

    ``loss[n] = sum_{i != y} w[y] * max(0, margin - x[n, y] + x[n, i])^p / C``.
    """
    x, t, out = _pair(call)
    p, margin = int(call.arg(2, "p", 1)), float(call.arg(3, "margin", 1.0))
    weight, reduction = call.arg(4, "weight"), int(call.arg(5, "reduction", _MEAN))
    if p not in (1, 2):
        raise UnsupportedOpError("multi_margin_loss supports p = 1 or 2")
    acc = accumulate_dtype(out.dtype)
    kb = ctx.kernel("multi_margin_loss")
    n_cls = x.shape[-1]
    rows = Nest(kb, t.shape, "n")
    (i,) = kb.fresh_vars(1, "c")
    y = ctx.read(t, rows.idx)
    xy = cast(ctx.read(x, [*rows.idx, y]), x.dtype, acc)
    xi = cast(ctx.read(x, [*rows.idx, i]), x.dtype, acc)
    z = fmax(_bin("+", _bin("-", _f(margin), xy), xi), _f(0.0))
    term = _bin("*", z, z) if p == 2 else z
    if isinstance(weight, TensorInfo):
        term = _bin("*", cast(ctx.read(weight, [y]), weight.dtype, acc), term)
    per = kb.local(acc, t.shape, "per_sample")
    per_at = per[tuple(rows.idx)] if t.rank else per.scalar()
    kb.emit(
        *rows.wrap(
            [
                Assign(per_at, _f(0.0)),
                *nest([(i, n_cls)], [If(_bin("!=", i, y), (Reduce(per_at, "+", term),))]),
                Assign(per_at, _bin("/", per_at, _f(n_cls))),
            ]
        )
    )
    red = reduction if t.rank else _NONE
    if red == _NONE:
        o = Nest(kb, t.shape, "n")
        kb.emit(
            *o.wrap([Assign(ctx.write(out, o.idx), per[tuple(o.idx)] if t.rank else per.scalar())])
        )
        return
    _reduced(ctx, kb, out, t.shape, red, lambda idx: per[tuple(idx)])


def _xlogy(ctx: LowerCtx, call: OpCall) -> None:
    """``xlogy(self, other) = self * log(other)``, 0 where ``self == 0`` (``F.kl_div``)."""
    a, b = call.arg(0, "self"), call.arg(1, "other")
    out = _out(call)

    def value(idx: tuple[Name, ...]) -> Expr:
        x, y = operand(a, idx, out.shape, out.dtype), operand(b, idx, out.shape, out.dtype)
        return Call("select", (_bin("==", x, _f(0.0)), _f(0.0), _bin("*", x, Call("log", (y,)))))

    elementwise(ctx, out, value)


# F.kl_div decomposes into xlogy, an elementwise op of the core family; registered here
# only while no other module provides it (the core module may take it over).
for _target in ("aten.xlogy.Tensor", "aten.xlogy.Scalar_Other", "aten.xlogy.Scalar_Self"):
    if LOWERINGS.find(_target) is None:
        LOWERINGS.register(_target)(_xlogy)
