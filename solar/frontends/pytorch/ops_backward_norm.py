"""Lowerings of the normalisation backward ops (docs/training.md): layer, group and batch
norm, each computing every gradient ``output_mask`` asks for in one launch (`OneKernel`).

Contract: as ops_backward.py. With ``xhat = (x - mean) * rstd`` and ``gw = grad * weight``
over a normalised group of ``M`` values: ``dx = rstd * (gw - mean(gw) - xhat *
mean(gw * xhat))``, ``dweight = sum(grad * xhat)``, ``dbias = sum(grad)`` over the other
dims (batch norm: per channel, with the saved or running statistics).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from solar.frontends.kit import (
    Nest,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    iadd,
    imul,
)
from solar.frontends.pytorch.lowering_utils import binop, fn, tensor_arg
from solar.frontends.pytorch.ops_backward import OneKernel
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Expr, IntLit, Reduce, Stmt, lit

__all__: list[str] = []


def _opt(x: object) -> TensorInfo | None:
    return x if isinstance(x, TensorInfo) else None


@LOWERINGS.register("aten.native_layer_norm_backward.default")
def _layer_norm_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``native_layer_norm_backward(grad, input, normalized_shape, mean, rstd, weight, bias,
    output_mask) -> (dx, dw, db)``: ``dx = rstd (g w - mean(g w) - xhat mean(g w xhat))``,
    ``dw = sum_rows(g xhat)``, ``db = sum_rows(g)``; one kernel per gradient."""
    g, x = tensor_arg(call, 0, "grad_out"), tensor_arg(call, 1, "input")
    normalized = tuple(call.arg(2, "normalized_shape"))
    mean, rstd = tensor_arg(call, 3, "mean"), tensor_arg(call, 4, "rstd")
    weight = _opt(call.arg(5, "weight"))
    dx, dw, db = [*call.outputs, None, None, None][:3]
    k = len(normalized)
    if k == 0 or tuple(x.shape[x.rank - k :]) != normalized:
        raise UnsupportedOpError("normalized_shape does not match the input")
    lead_shape, count = list(x.shape[: x.rank - k]), math.prod(normalized)
    dt = accumulate_dtype(x.dtype)
    ctx = OneKernel(ctx)

    def xhat(rows: Sequence[Expr], cols: Sequence[Expr]) -> Expr:
        stat = [*rows, *([IntLit(0)] * k)]
        xv = cast(ctx.read(x, [*rows, *cols]), x.dtype, dt)
        return binop(
            "*",
            binop("-", xv, cast(ctx.read(mean, stat), mean.dtype, dt)),
            cast(ctx.read(rstd, stat), rstd.dtype, dt),
        )

    def gw(rows: Sequence[Expr], cols: Sequence[Expr]) -> Expr:
        gv = cast(ctx.read(g, [*rows, *cols]), g.dtype, dt)
        return binop("*", gv, cast(ctx.read(weight, cols), weight.dtype, dt)) if weight else gv

    if dx is not None:
        kb = ctx.kernel("layer_norm_backward_input")
        rows = Nest(kb, lead_shape, "i")
        a_ref, b_ref = kb.local(dt, lead_shape, "a"), kb.local(dt, lead_shape, "b")
        a = a_ref[tuple(rows.idx)] if lead_shape else a_ref.scalar()
        b = b_ref[tuple(rows.idx)] if lead_shape else b_ref.scalar()
        red, full = Nest(kb, normalized, "j"), Nest(kb, normalized, "j")
        rstd_v = cast(ctx.read(rstd, [*rows.idx, *([IntLit(0)] * k)]), rstd.dtype, dt)
        val = binop(
            "*",
            rstd_v,
            binop(
                "-",
                binop("-", gw(rows.idx, full.idx), binop("/", a, lit(float(count)))),
                binop("*", xhat(rows.idx, full.idx), binop("/", b, lit(float(count)))),
            ),
        )
        kb.emit(
            *rows.wrap(
                [
                    Assign(a, lit(0.0)),
                    Assign(b, lit(0.0)),
                    *red.wrap(
                        [
                            Reduce(a, "+", gw(rows.idx, red.idx)),
                            Reduce(
                                b, "+", binop("*", gw(rows.idx, red.idx), xhat(rows.idx, red.idx))
                            ),
                        ]
                    ),
                    *full.wrap(
                        [Assign(ctx.write(dx, [*rows.idx, *full.idx]), cast(val, dt, dx.dtype))]
                    ),
                ]
            )
        )
    for out, with_xhat, hint in (
        (dw, True, "layer_norm_backward_weight"),
        (db, False, "layer_norm_backward_bias"),
    ):
        if out is None:
            continue
        kb = ctx.kernel(hint)
        cols, rows = Nest(kb, normalized, "j"), Nest(kb, lead_shape, "i")
        tgt = ctx.write(out, cols.idx)
        gv = cast(ctx.read(g, [*rows.idx, *cols.idx]), g.dtype, dt)
        term = binop("*", gv, xhat(rows.idx, cols.idx)) if with_xhat else gv
        kb.emit(*cols.wrap([Assign(tgt, lit(0.0)), *rows.wrap([Reduce(tgt, "+", term)])]))


@LOWERINGS.register("aten.native_group_norm_backward.default")
def _group_norm_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``native_group_norm_backward(grad, input, mean, rstd, weight, N, C, HxW, group,
    output_mask) -> (dx, dw, db)``: layer norm's backward over each ``(n, group)``, the
    affine gradients summed per channel; one launch."""
    g, x = tensor_arg(call, 0, "grad_out"), tensor_arg(call, 1, "input")
    mean, rstd = tensor_arg(call, 2, "mean"), tensor_arg(call, 3, "rstd")
    weight = _opt(call.arg(4, "weight"))
    groups = int(call.arg(8, "group"))
    dx, dw, db = [*call.outputs, None, None, None][:3]
    if x.rank < 2 or x.shape[1] % groups:
        raise UnsupportedOpError("group_norm_backward: [N, C, *] with C divisible by groups")
    n_ext, chans, spatial = x.shape[0], x.shape[1], list(x.shape[2:])
    cg = chans // groups
    count = cg * math.prod(spatial)
    dt = accumulate_dtype(x.dtype)
    ctx = OneKernel(ctx)
    kb = ctx.kernel()
    sp_hint = ["i"] * len(spatial)

    def at(t: TensorInfo, n: Expr, c: Expr, sp: Sequence[Expr]) -> Expr:
        return cast(ctx.read(t, [n, c, *sp]), t.dtype, dt)

    def xhat(n: Expr, gi: Expr, c: Expr, sp: Sequence[Expr]) -> Expr:
        centred = binop("-", at(x, n, c, sp), cast(ctx.read(mean, [n, gi]), mean.dtype, dt))
        return binop("*", centred, cast(ctx.read(rstd, [n, gi]), rstd.dtype, dt))

    def gw(n: Expr, c: Expr, sp: Sequence[Expr]) -> Expr:
        gv = at(g, n, c, sp)
        return binop("*", gv, cast(ctx.read(weight, [c]), weight.dtype, dt)) if weight else gv

    if dx is not None:
        outer = Nest(kb, [n_ext, groups], ["n", "g"])
        n, gi = outer.idx
        a = kb.local(dt, [n_ext, groups], "a")[n, gi]
        b = kb.local(dt, [n_ext, groups], "b")[n, gi]
        red, full = (
            Nest(kb, [cg, *spatial], ["c", *sp_hint]),
            Nest(kb, [cg, *spatial], ["c", *sp_hint]),
        )
        rc, fc = iadd(imul(gi, cg), red.idx[0]), iadd(imul(gi, cg), full.idx[0])
        r_at, f_at = red.idx[1:], full.idx[1:]
        val = binop(
            "*",
            cast(ctx.read(rstd, [n, gi]), rstd.dtype, dt),
            binop(
                "-",
                binop("-", gw(n, fc, f_at), binop("/", a, lit(float(count)))),
                binop("*", xhat(n, gi, fc, f_at), binop("/", b, lit(float(count)))),
            ),
        )
        kb.emit(
            *outer.wrap(
                [
                    Assign(a, lit(0.0)),
                    Assign(b, lit(0.0)),
                    *red.wrap(
                        [
                            Reduce(a, "+", gw(n, rc, r_at)),
                            Reduce(b, "+", binop("*", gw(n, rc, r_at), xhat(n, gi, rc, r_at))),
                        ]
                    ),
                    *full.wrap([Assign(ctx.write(dx, [n, fc, *f_at]), cast(val, dt, dx.dtype))]),
                ]
            )
        )
    for out, with_xhat in ((dw, True), (db, False)):
        if out is None:
            continue
        chan = Nest(kb, [groups, cg], ["g", "c"])
        gi, c = chan.idx
        cc = iadd(imul(gi, cg), c)
        rows = Nest(kb, [n_ext, *spatial], ["n", *sp_hint])
        n, sp = rows.idx[0], rows.idx[1:]
        acc = kb.local(dt, [], "acc").scalar()
        term = binop("*", at(g, n, cc, sp), xhat(n, gi, cc, sp)) if with_xhat else at(g, n, cc, sp)
        kb.emit(
            *chan.wrap(
                [
                    Assign(acc, lit(0.0)),
                    *rows.wrap([Reduce(acc, "+", term)]),
                    Assign(ctx.write(out, [cc]), cast(acc, dt, out.dtype)),
                ]
            )
        )


@LOWERINGS.register("aten.native_batch_norm_backward.default")
def _batch_norm_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``native_batch_norm_backward(grad, input, weight, running_mean, running_var,
    save_mean, save_invstd, train, eps, output_mask) -> (dx, dw, db)`` over ``[N, C, *]``."""
    g, x = tensor_arg(call, 0, "grad_out"), tensor_arg(call, 1, "input")
    weight = _opt(call.arg(2, "weight"))
    train = bool(call.arg(7, "train"))
    eps = float(call.arg(8, "eps"))
    mean_t = _opt(call.arg(5, "save_mean")) if train else _opt(call.arg(3, "running_mean"))
    var_t = _opt(call.arg(6, "save_invstd")) if train else _opt(call.arg(4, "running_var"))
    dx, dw, db = [*call.outputs, None, None, None][:3]
    if x.rank < 2 or mean_t is None or var_t is None:
        raise UnsupportedOpError("batch_norm_backward without statistics")
    dt = accumulate_dtype(x.dtype)
    chans, n_ext, spatial = x.shape[1], x.shape[0], list(x.shape[2:])
    count = x.numel // chans

    def invstd(c: Expr) -> Expr:
        v = cast(ctx.read(var_t, [c]), var_t.dtype, dt)
        return v if train else fn("rsqrt", binop("+", v, lit(eps)))

    def xmu(n: Expr, c: Expr, sp: Sequence[Expr]) -> Expr:
        xv = cast(ctx.read(x, [n, c, *sp]), x.dtype, dt)
        return binop("-", xv, cast(ctx.read(mean_t, [c]), mean_t.dtype, dt))

    def gat(n: Expr, c: Expr, sp: Sequence[Expr]) -> Expr:
        return cast(ctx.read(g, [n, c, *sp]), g.dtype, dt)

    kb = ctx.kernel("batch_norm_backward")
    ch = Nest(kb, [chans], "c")
    c = ch.idx[0]
    sdy, sdx = kb.local(dt, [chans], "sum_dy")[c], kb.local(dt, [chans], "sum_dy_xmu")[c]
    body: list[Stmt] = []
    if train or dw is not None or db is not None:
        red = Nest(kb, [n_ext, *spatial], ["n"] + ["i"] * len(spatial))
        n, sp = red.idx[0], red.idx[1:]
        body += [
            Assign(sdy, lit(0.0)),
            Assign(sdx, lit(0.0)),
            *red.wrap(
                [
                    Reduce(sdy, "+", gat(n, c, sp)),
                    Reduce(sdx, "+", binop("*", gat(n, c, sp), xmu(n, c, sp))),
                ]
            ),
        ]
    w = cast(ctx.read(weight, [c]), weight.dtype, dt) if weight is not None else None
    if dx is not None:
        full = Nest(kb, [n_ext, *spatial], ["n"] + ["i"] * len(spatial))
        n, sp = full.idx[0], full.idx[1:]
        scale = binop("*", invstd(c), w) if w is not None else invstd(c)
        if train:
            proj = binop(
                "*",
                binop("*", xmu(n, c, sp), binop("*", invstd(c), invstd(c))),
                binop("/", sdx, lit(float(count))),
            )
            core = binop("-", binop("-", gat(n, c, sp), binop("/", sdy, lit(float(count)))), proj)
        else:
            core = gat(n, c, sp)
        body += full.wrap(
            [Assign(ctx.write(dx, [n, c, *sp]), cast(binop("*", core, scale), dt, dx.dtype))]
        )
    if dw is not None:
        body.append(Assign(ctx.write(dw, [c]), cast(binop("*", sdx, invstd(c)), dt, dw.dtype)))
    if db is not None:
        body.append(Assign(ctx.write(db, [c]), cast(sdy, dt, db.dtype)))
    kb.emit(*ch.wrap(body))
