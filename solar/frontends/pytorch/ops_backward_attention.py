"""Lowering of the fused attention backward (docs/training.md): one kernel, as flash.

Contract: ``(LowerCtx, OpCall) -> None``. For each query row ``i`` (per batch and head),
with ``P`` and ``dS`` kernel-local (never in DRAM, as a flash backward keeps them)::

    P[i, j] = exp(scale * q[i] . k[j] (+ mask[i, j]) - lse[i])   (recomputed)
    D[i] = dO[i] . O[i];  dS[i, j] = P[i, j] * (dO[i] . v[j] - D[i])
    dQ[i] = scale * sum_j dS[i, j] k[j]

then per key row ``j``: ``dK[j] = scale * sum_i dS[i, j] q[i]`` and ``dV[j] = sum_i P[i, j]
dO[i]``: five matmul-sized contractions, the count of a flash backward. Causal attention
(top-left aligned, ``j <= i``) runs triangular loops, so masked entries cost nothing.

Note [Grouped-query heads]: with ``H`` query heads and ``Hk`` key/value heads (``H`` a
multiple of ``Hk``; eager's CPU kernel takes them unexpanded under ``enable_gqa``),
query head ``h`` reads key head ``h // (H/Hk)``, and ``dK``/``dV`` of key head ``hk`` sum
over the query rows of its ``H/Hk`` query heads (the FLOPs of the expanded attention,
the bytes of the unexpanded keys). ``dropout_p > 0`` is not lowered (uncovered; CPU SDPA
runs attention dropout on the math path, so it does not reach this op, nor do boolean
masks, which SDPA turns into additive float masks first).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    iadd,
    imul,
    nest,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign as Set
from solar.ir import Binary, Call, DType, Expr, IntLit, Name, Reduce, Stmt, lit

__all__: list[str] = []

Loop = tuple[Name, Expr] | tuple[Name, Expr, Expr]


def _t(call: OpCall, pos: int, name: str) -> TensorInfo:
    x = call.arg(pos, name)
    if not isinstance(x, TensorInfo):
        raise UnsupportedOpError(f"{call.target}: {name} is not a tensor")
    return x


@LOWERINGS.register("aten._scaled_dot_product_flash_attention_for_cpu_backward.default")
def _flash_cpu_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask,
    scale) -> (grad_query, grad_key, grad_value)``."""
    g, q, k, v = (
        _t(call, 0, "grad_out"),
        _t(call, 1, "query"),
        _t(call, 2, "key"),
        _t(call, 3, "value"),
    )
    o, lse = _t(call, 4, "out"), _t(call, 5, "logsumexp")
    if float(call.arg(6, "dropout_p", 0.0) or 0.0) > 0.0:
        raise UnsupportedOpError("attention dropout is random")
    causal = bool(call.arg(7, "is_causal", False))
    mask = call.kwargs.get("attn_mask")
    if mask is not None and (not isinstance(mask, TensorInfo) or mask.dtype == DType.BOOL):
        raise UnsupportedOpError("attention backward with a boolean mask")
    group = _query_group(q, k, v)
    lead, n_q, e_dim = list(q.shape[:-2]), q.shape[-2], q.shape[-1]
    n_k, ev = k.shape[-2], v.shape[-1]
    if causal and n_q != n_k:
        raise UnsupportedOpError("causal attention backward with L != S")
    dq, dk, dv = [*call.outputs, None, None, None][:3]
    scale_arg = call.kwargs.get("scale")
    scale = float(scale_arg) if scale_arg is not None else 1.0 / math.sqrt(e_dim)
    acc = accumulate_dtype(q.dtype)
    kb = ctx.kernel("attention_backward")
    outer = Nest(kb, lead, "h")
    b = list(outer.idx)
    p = kb.local(acc, [*lead, n_q, n_k], "p")
    ds = kb.local(acc, [*lead, n_q, n_k], "ds")
    dd = kb.local(acc, [*lead, n_q], "d")

    def rd(t: TensorInfo, idx: list[Expr]) -> Expr:
        return cast(ctx.read(t, idx), t.dtype, acc)

    def mul(a: Expr, c: Expr) -> Expr:
        return Binary("*", a, c)

    # Note [Grouped-query heads]: query head h reads key/value head h // group
    bk = [*b[:-1], Binary("//", b[-1], IntLit(group))] if group > 1 else b
    (i,) = kb.fresh_vars(1, "i")
    j_hi: Expr = iadd(i, 1) if causal else lit(n_k)
    j1, j2, j3 = kb.fresh_vars(3, "j")
    e1, e2, e3 = kb.fresh_vars(3, "e")
    p_ij, ds_ij, d_i = p[(*b, i, j1)], ds[(*b, i, j2)], dd[(*b, i)]
    logit: Expr = mul(p_ij, lit(scale))
    if isinstance(mask, TensorInfo):
        off = len(lead) + 2 - mask.rank
        full = [*b, i, j1]
        midx: list[Expr] = [
            IntLit(0) if d == 1 and ([*lead, n_q, n_k][off + n]) != 1 else full[off + n]
            for n, d in enumerate(mask.shape)
        ]
        logit = Binary("+", logit, rd(mask, midx))
    lse_idx = [*b, i, *([IntLit(0)] * (lse.rank - len(lead) - 1))]
    rows: list[Stmt] = [
        *nest(
            [(j1, j_hi)],
            [
                Set(p_ij, lit(0.0)),
                *nest(
                    [(e1, e_dim)],
                    [Reduce(p_ij, "+", mul(rd(q, [*b, i, e1]), rd(k, [*bk, j1, e1])))],
                ),
                Set(p_ij, Call("exp", (Binary("-", logit, rd(lse, lse_idx)),))),
            ],
        ),
        Set(d_i, lit(0.0)),
        *nest([(e2, ev)], [Reduce(d_i, "+", mul(rd(g, [*b, i, e2]), rd(o, [*b, i, e2])))]),
        *nest(
            [(j2, j_hi)],
            [
                Set(ds_ij, lit(0.0)),
                *nest(
                    [(e3, ev)], [Reduce(ds_ij, "+", mul(rd(g, [*b, i, e3]), rd(v, [*bk, j2, e3])))]
                ),
                Set(ds_ij, mul(p[(*b, i, j2)], Binary("-", ds_ij, d_i))),
            ],
        ),
    ]
    if dq is not None:
        rows += _contract(
            ctx,
            kb,
            dq,
            [*b, i],
            [(j3, j_hi)],
            e_dim,
            scale,
            lambda e: mul(ds[(*b, i, j3)], rd(k, [*bk, j3, e])),
            acc,
        )
    kb.emit(*outer.wrap(nest([(i, n_q)], rows)))
    # per key row j (of key head hk): dK, dV sum over the query rows of its query heads
    kouter = Nest(kb, list(k.shape[:-2]), "hk")
    hk = list(kouter.idx)
    (jj,) = kb.fresh_vars(1, "jk")
    i_lo: Expr = jj if causal else lit(0)

    def query_rows(name: str) -> tuple[list[Loop], list[Expr]]:
        """The reduction loops over (query head in the group,) query row; the query
        head's subscripts."""
        (ii,) = kb.fresh_vars(1, name)
        rows_loop: Loop = (ii, i_lo, lit(n_q)) if causal else (ii, lit(n_q))
        if group == 1:
            return [rows_loop], [*hk, ii]
        (r,) = kb.fresh_vars(1, "r")
        return [(r, lit(group)), rows_loop], [*hk[:-1], iadd(imul(hk[-1], group), r), ii]

    key_rows: list[Stmt] = []
    if dk is not None:
        loops, qi = query_rows("iq")
        key_rows += _contract(
            ctx,
            kb,
            dk,
            [*hk, jj],
            loops,
            e_dim,
            scale,
            lambda e: mul(ds[(*qi, jj)], rd(q, [*qi, e])),
            acc,
        )
    if dv is not None:
        loops, qi2 = query_rows("iq")
        key_rows += _contract(
            ctx,
            kb,
            dv,
            [*hk, jj],
            loops,
            ev,
            None,
            lambda e: mul(p[(*qi2, jj)], rd(g, [*qi2, e])),
            acc,
        )
    kb.emit(*kouter.wrap(nest([(jj, n_k)], key_rows)))


def _query_group(q: TensorInfo, k: TensorInfo, v: TensorInfo) -> int:
    """Query heads per key/value head (1 without grouped-query attention)."""
    if q.rank < 3 or k.rank != q.rank or v.rank != q.rank:
        raise UnsupportedOpError("attention backward: operands of different ranks")
    if q.shape[:-3] != k.shape[:-3] or k.shape[:-2] != v.shape[:-2]:
        raise UnsupportedOpError("attention backward: mismatched batch or heads")
    h, hk = q.shape[-3], k.shape[-3]
    if h % hk:
        raise UnsupportedOpError("attention backward: query heads not a multiple of key heads")
    return h // hk


def _contract(
    ctx: LowerCtx,
    kb: Sink,
    out: TensorInfo,
    row: list[Expr],
    loops: list[Loop],
    width: int,
    scale: float | None,
    term: Callable[[Name], Expr],
    acc: DType,
) -> list[Stmt]:
    """``out[row, e] = (scale *) sum_loops term(e)`` for every ``e`` (an f32 accumulator)."""
    (e,) = kb.fresh_vars(1, "e")
    a = kb.local(acc, [], "acc").scalar()
    value: Expr = a if scale is None else Binary("*", a, lit(scale))
    return nest(
        [(e, width)],
        [
            Set(a, lit(0.0)),
            *nest(loops, [Reduce(a, "+", term(e))]),
            Set(ctx.write(out, [*row, e]), cast(value, acc, out.dtype)),
        ],
    )
