"""Lowerings of ATen scaled-dot-product attention ops: one fused kernel each.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel with kernel-local
scores ``S[..., i, j]``, row maxima and row sums (in f32 for 16-bit inputs):

    S = (Q K^T) * scale (+ additive mask | bool mask -> -inf);  m = max_j S
    S = exp(S - m);  l = sum_j S;  O = (S V) / l;  logsumexp = m + log(l)

Causal attention (torch's top-left aligned ``j <= i``) uses triangular loops
``for j in 0 .. i + 1``, so masked scores are never computed and FLOPs count the
triangle; rows past the key length (``L > S``) get a full-width loop. Grouped-query
attention (fewer key/value heads) splits the query-head loop into ``(kv head, rep)`` so
every subscript stays affine. ``dropout_p > 0`` is random and is rejected.

Note [Fully masked rows]: a query whose every key the mask hides (a left-padded
batch: transformers' padding mask leaves the pad positions' rows all ``-inf``) has a
row maximum of ``-inf``, and ``exp(S - m)`` is NaN there. torch returns zeros for such a
row (the math path's ``_safe_softmax``, and CPU flash attention, whose logsumexp is
then 0 too). With a mask, each row therefore ends in ``if m == -inf { row = 0 }``: a
value-dependent ``if``, whose condition costs one comparison per row and whose zero
writes are not charged (a lower bound: rows are rarely all masked).

CPU dispatch (torch 2.13): ``F.scaled_dot_product_attention`` on 4-D inputs reaches
``_scaled_dot_product_flash_attention_for_cpu`` (boolean masks are first converted to
additive float masks with ``where``; ``enable_gqa`` passes through); 3-D inputs take
the math path (bmm + ``_safe_softmax``). The CUDA-path siblings (flash, efficient,
cuDNN) and the math op are registered here too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    TensorRef,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    iadd,
    imul,
    nest,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    DType,
    Expr,
    If,
    IntLit,
    Name,
    Reduce,
    Stmt,
    Unary,
    lit,
)

__all__ = ["Attention", "emit_attention"]


@dataclass(frozen=True, slots=True)
class Attention:
    """One attention problem: ``q [*lead, L, E]``, ``k [*lead', S, E]``, ``v [*lead', S, Ev]``.

    ``lead'`` equals ``lead`` except for a smaller head dim (-3) under grouped-query
    attention. ``mask`` broadcasts to ``[*lead, L, S]``. Optional outputs: ``lse``
    (``[*lead, L]``, or with a trailing 1) and ``weights`` (``[*lead, L, S]``).
    """

    q: TensorInfo
    k: TensorInfo
    v: TensorInfo
    out: TensorInfo
    mask: TensorInfo | None = None
    causal: bool = False
    scale: float | None = None
    lse: TensorInfo | None = None
    weights: TensorInfo | None = None


def _bcast(shape: Sequence[int], full: Sequence[int], idx: Sequence[Expr]) -> list[Expr]:
    off = len(full) - len(shape)
    return [
        IntLit(0) if d == 1 and full[off + k] != 1 else idx[off + k] for k, d in enumerate(shape)
    ]


def _kv_repeat(q: TensorInfo, k: TensorInfo, v: TensorInfo) -> int:
    """How many query heads share a key/value head (grouped-query attention; 1 without).

    Raises:
        UnsupportedOpError: q/k/v shapes that do not fit.
    """
    if k.shape[-1] != q.shape[-1] or v.shape[-2] != k.shape[-2] or k.rank != q.rank:
        raise UnsupportedOpError("attention: q/k/v shapes do not match")
    if q.rank < 3 or k.shape[-3] == q.shape[-3]:
        return 1
    if q.shape[-3] % k.shape[-3]:
        raise UnsupportedOpError("attention: query heads not a multiple of key/value heads")
    return q.shape[-3] // k.shape[-3]


def _lead_nest(
    kb: Sink, q: TensorInfo, k: TensorInfo, rep: int
) -> tuple[Nest, list[Expr], list[Expr]]:
    """The lead loops and the query's and key/value's lead indices; with GQA the head
    dim becomes (kv head, rep)."""
    lead, kv_lead = q.shape[:-2], k.shape[:-2]
    if rep > 1:
        outer = Nest(kb, [*lead[:-1], kv_lead[-1], rep], ["b"] * (len(lead) - 1) + ["h", "r"])
        hk, r = outer.idx[-2], outer.idx[-1]
        return outer, [*outer.idx[:-2], iadd(imul(hk, rep), r)], [*outer.idx[:-2], hk]
    outer = Nest(kb, list(lead), ["b"] * (len(lead) - 1) + ["h"] if lead else [])
    kv_idx = [
        IntLit(0) if kd == 1 and qd != 1 else ix
        for kd, qd, ix in zip(kv_lead, lead, outer.idx, strict=True)
    ]
    return outer, list(outer.idx), kv_idx


def _masked(
    mask: TensorInfo | None, scaled: Expr, full: Sequence[int], at: list[Expr], acc: DType
) -> Expr:
    """A scaled logit under the mask at ``at`` (of the ``full`` score shape): a boolean
    mask selects ``-inf``, a float one is added."""
    if mask is None:
        return scaled
    mval = LowerCtx.read(mask, _bcast(mask.shape, full, at))
    if mask.dtype == DType.BOOL:
        return Call("select", (mval, scaled, Unary("-", lit(float("inf")))))
    return Binary("+", scaled, cast(mval, mask.dtype, acc))


def _weight_rows(
    kb: Sink,
    weights: TensorInfo,
    probs: TensorRef,
    l_at: Expr,
    row: list[Expr],
    j_hi: Expr,
    n_k: int,
) -> list[Stmt]:
    """The attention weights of one query row: ``P / l`` up to ``j_hi``, zeros after."""
    (j5, j6) = kb.fresh_vars(2, "j")
    body = nest(
        [(j5, j_hi)],
        [Assign(LowerCtx.write(weights, [*row, j5]), Binary("/", probs[(*row, j5)], l_at))],
    )
    if not (isinstance(j_hi, IntLit) and j_hi.value == n_k):
        body += nest(
            [(j6, j_hi, lit(n_k))],
            [Assign(LowerCtx.write(weights, [*row, j6]), lit(0.0))],
        )
    return body


def _zero_if_all_masked(kb: Sink, a: Attention, m_at: Expr, row: list[Expr]) -> If:
    """``if m == -inf``: the row's outputs are 0 (Note [Fully masked rows])."""
    (d, j) = kb.fresh_vars(2, "z")
    zeros: list[Stmt] = nest(
        [(d, a.out.shape[-1])], [Assign(LowerCtx.write(a.out, [*row, d]), lit(0.0))]
    )
    if a.lse is not None:
        tail = [IntLit(0)] * (a.lse.rank - len(row))
        zeros.append(Assign(LowerCtx.write(a.lse, [*row, *tail]), lit(0.0)))
    if a.weights is not None:
        zeros += nest(
            [(j, a.weights.shape[-1])], [Assign(LowerCtx.write(a.weights, [*row, j]), lit(0.0))]
        )
    return If(Binary("==", m_at, Unary("-", lit(float("inf")))), tuple(zeros))


def emit_attention(ctx: LowerCtx, kb: Sink, a: Attention) -> None:
    """Emit the attention loops for ``a`` into ``kb``.

    Raises:
        UnsupportedOpError: shapes that do not fit (e.g. query heads not a multiple
            of key/value heads).
    """
    q, k, v = a.q, a.k, a.v
    lead, (n_q, e_dim) = q.shape[:-2], q.shape[-2:]
    n_k, ev = k.shape[-2], v.shape[-1]
    acc = accumulate_dtype(a.out.dtype)
    scale = a.scale if a.scale is not None else 1.0 / math.sqrt(e_dim)
    outer, q_lead, kv_idx = _lead_nest(kb, q, k, _kv_repeat(q, k, v))
    scores = kb.local(acc, [*lead, n_q, n_k], "scores")
    # Note [Mask spellings] in solar.ir.masks: with a mask, the masked logits and the
    # probabilities get locals of their own, each written once, so that a mask the
    # bounds can fold (``generate_square_subsequent_mask``) skips Q K^T and P V alike
    logits = kb.local(acc, [*lead, n_q, n_k], "logits") if a.mask is not None else scores
    probs = kb.local(acc, [*lead, n_q, n_k], "probs") if a.mask is not None else scores
    row_max = kb.local(acc, [*lead, n_q], "row_max")
    row_sum = kb.local(acc, [*lead, n_q], "row_sum")
    o_acc = kb.local(acc, [*lead, n_q, ev], "o_acc") if acc != a.out.dtype else None
    full = [*lead, n_q, n_k]

    def rows(i: Name, j_hi: Expr) -> list[Stmt]:
        (j, j2, j3, j4, d, d2) = (*kb.fresh_vars(4, "j"), *kb.fresh_vars(2, "d"))
        s_at = scores[(*q_lead, i, j)]
        m_at, l_at = row_max[(*q_lead, i)], row_sum[(*q_lead, i)]
        qk = Binary(
            "*",
            cast(ctx.read(q, [*q_lead, i, d]), q.dtype, acc),
            cast(ctx.read(k, [*kv_idx, j, d]), k.dtype, acc),
        )
        scaled = _masked(a.mask, Binary("*", s_at, lit(scale)), full, [*q_lead, i, j], acc)
        s3 = probs[(*q_lead, i, j3)]
        out_t: Access = (
            o_acc[(*q_lead, i, d2)] if o_acc is not None else ctx.write(a.out, [*q_lead, i, d2])
        )
        body: list[Stmt] = [
            *nest(
                [(j, j_hi)],
                [
                    Assign(s_at, lit(0.0)),
                    *nest([(d, e_dim)], [Reduce(s_at, "+", qk)]),
                    Assign(logits[(*q_lead, i, j)], scaled),
                ],
            ),
            Assign(m_at, Unary("-", lit(float("inf")))),
            *nest([(j2, j_hi)], [Reduce(m_at, "max", logits[(*q_lead, i, j2)])]),
            Assign(l_at, lit(0.0)),
            *nest(
                [(j3, j_hi)],
                [
                    Assign(s3, Call("exp", (Binary("-", logits[(*q_lead, i, j3)], m_at),))),
                    Reduce(l_at, "+", s3),
                ],
            ),
            *nest(
                [(d2, ev)],
                [
                    Assign(out_t, lit(0.0)),
                    *nest(
                        [(j4, j_hi)],
                        [
                            Reduce(
                                out_t,
                                "+",
                                Binary(
                                    "*",
                                    probs[(*q_lead, i, j4)],
                                    cast(ctx.read(v, [*kv_idx, j4, d2]), v.dtype, acc),
                                ),
                            )
                        ],
                    ),
                    Assign(out_t, Binary("/", out_t, l_at)),
                    *(
                        [Assign(ctx.write(a.out, [*q_lead, i, d2]), out_t)]
                        if o_acc is not None
                        else []
                    ),
                ],
            ),
        ]
        if a.lse is not None:
            tail = [IntLit(0)] * (a.lse.rank - len(lead) - 1)
            body.append(
                Assign(
                    ctx.write(a.lse, [*q_lead, i, *tail]), Binary("+", m_at, Call("log", (l_at,)))
                )
            )
        if a.weights is not None:
            body += _weight_rows(kb, a.weights, probs, l_at, [*q_lead, i], j_hi, n_k)
        if a.mask is not None:
            body.append(_zero_if_all_masked(kb, a, m_at, [*q_lead, i]))
        return body

    stmts: list[Stmt] = []
    if a.causal:
        (i,) = kb.fresh_vars(1, "i")
        stmts += nest([(i, min(n_q, n_k))], rows(i, iadd(i, 1)))
        if n_q > n_k:
            (i2,) = kb.fresh_vars(1, "i")
            stmts += nest([(i2, lit(n_k), lit(n_q))], rows(i2, lit(n_k)))
    else:
        (i,) = kb.fresh_vars(1, "i")
        stmts += nest([(i, n_q)], rows(i, lit(n_k)))
    kb.emit(*outer.wrap(stmts))


def _sdpa(
    ctx: LowerCtx,
    call: OpCall,
    *,
    mask_at: int | None,
    causal_at: int,
    dropout_at: int,
    lse_pos: int | None = 1,
    weights_pos: int | None = None,
    mask_name: str = "attn_mask",
) -> None:
    q, k, v = call.arg(0, "query"), call.arg(1, "key"), call.arg(2, "value")
    out = call.outputs[0]
    if not all(isinstance(t, TensorInfo) for t in (q, k, v)) or out is None:
        raise UnsupportedOpError(f"{call.target}: tensor q/k/v expected")
    if float(call.arg(dropout_at, "dropout_p", 0.0) or 0.0) > 0.0:
        raise UnsupportedOpError("attention dropout is random; only dropout_p=0 is lowered")
    mask = call.arg(mask_at, mask_name) if mask_at is not None else call.kwargs.get(mask_name)
    lse = call.outputs[lse_pos] if lse_pos is not None and len(call.outputs) > lse_pos else None
    if lse is not None and tuple(lse.shape[: q.rank - 1]) != tuple(q.shape[:-1]):
        lse = None  # a padded layout (memory-efficient kernels): not modelled
    weights = (
        call.outputs[weights_pos]
        if weights_pos is not None and len(call.outputs) > weights_pos
        else None
    )
    scale = call.kwargs.get("scale")
    att = Attention(
        q,
        k,
        v,
        out,
        mask if isinstance(mask, TensorInfo) else None,
        bool(call.arg(causal_at, "is_causal", False)),
        None if scale is None else float(scale),
        lse,
        weights,
    )
    emit_attention(ctx, ctx.kernel("attention"), att)


@LOWERINGS.register("aten._scaled_dot_product_flash_attention_for_cpu.default")
def _flash_cpu(ctx: LowerCtx, call: OpCall) -> None:
    """``(query, key, value, dropout_p, is_causal, *, attn_mask, scale) -> (out, logsumexp)``."""
    _sdpa(ctx, call, mask_at=None, causal_at=4, dropout_at=3)


@LOWERINGS.register("aten._scaled_dot_product_flash_attention.default")
def _flash(ctx: LowerCtx, call: OpCall) -> None:
    """``(query, key, value, dropout_p, is_causal, return_debug_mask, *, scale)``."""
    _sdpa(ctx, call, mask_at=None, causal_at=4, dropout_at=3)


@LOWERINGS.register(
    "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_cudnn_attention.default",
)
def _efficient(ctx: LowerCtx, call: OpCall) -> None:
    """``(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, ...)``."""
    _sdpa(ctx, call, mask_at=3, causal_at=6, dropout_at=5, mask_name="attn_bias")


@LOWERINGS.register("aten.scaled_dot_product_attention.default")
def _sdpa_composite(ctx: LowerCtx, call: OpCall) -> None:
    """``(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)``."""
    scale = call.arg(6, "scale")
    kwargs = dict(call.kwargs)
    kwargs["scale"] = scale
    _sdpa(
        ctx,
        OpCall(call.target, call.args[:6], kwargs, call.outputs),
        mask_at=3,
        causal_at=5,
        dropout_at=4,
        lse_pos=None,
    )


@LOWERINGS.register("aten._scaled_dot_product_attention_math.default")
def _sdpa_math(ctx: LowerCtx, call: OpCall) -> None:
    """``(query, key, value, attn_mask, dropout_p, is_causal, dropout_mask, *, scale, ...)``."""
    mask = call.arg(3, "attn_mask")
    if isinstance(mask, TensorInfo) and mask.dtype == DType.BOOL:
        # called directly, the math op adds a bool mask as 0/1 (the composite converts it first)
        raise UnsupportedOpError("_scaled_dot_product_attention_math with a bool mask")
    _sdpa(ctx, call, mask_at=3, causal_at=5, dropout_at=4, lse_pos=None, weights_pos=1)


def _safe_softmax(ctx: LowerCtx, call: OpCall) -> None:
    """``_safe_softmax(self, dim, dtype=None)``: softmax, but rows of all ``-inf`` give 0.

    The math SDPA path (3-D inputs) normalises its scores with it.
    """
    x, out = call.arg(0, "self"), call.outputs[0]
    if not isinstance(x, TensorInfo) or out is None or x.rank == 0:
        raise UnsupportedOpError("_safe_softmax: a tensor of rank >= 1 expected")
    dim = int(call.arg(1, "dim")) % x.rank
    kb = ctx.kernel("safe_softmax")
    acc = accumulate_dtype(out.dtype)
    kept = [d for k, d in enumerate(x.shape) if k != dim]
    rows = Nest(kb, kept, "i")
    row_max = kb.local(acc, kept, "row_max")
    row_sum = kb.local(acc, kept, "row_sum")
    e = kb.local(acc, x.shape, "e")
    j1, j2, j3 = kb.fresh_vars(3, "j")

    def at(j: Expr) -> list[Expr]:
        return [*rows.idx[:dim], j, *rows.idx[dim:]]

    def key(t: TensorRef) -> Access:
        return t[tuple(rows.idx)] if kept else t.scalar()

    m, s = key(row_max), key(row_sum)
    xv = cast(ctx.read(x, at(j1)), x.dtype, acc)
    x2 = cast(ctx.read(x, at(j2)), x.dtype, acc)
    n = x.shape[dim]
    body: list[Stmt] = [
        Assign(m, Unary("-", lit(float("inf")))),
        *nest([(j1, n)], [Reduce(m, "max", xv)]),
        Assign(s, lit(0.0)),
        *nest(
            [(j2, n)],
            [
                Assign(e[tuple(at(j2))], Call("exp", (Binary("-", x2, m),))),
                Reduce(s, "+", e[tuple(at(j2))]),
            ],
        ),
        *nest(
            [(j3, n)],
            [
                Assign(
                    ctx.write(out, at(j3)),
                    Call(
                        "select",
                        (
                            Binary("==", m, Unary("-", lit(float("inf")))),
                            lit(0.0),
                            Binary("/", e[tuple(at(j3))], s),
                        ),
                    ),
                )
            ],
        ),
    ]
    kb.emit(*rows.wrap(body))


# _safe_softmax belongs with softmax (ops_reduce.py); registered here, under the exact
# overload name, only while no other module provides it.
if LOWERINGS.find("aten._safe_softmax.default") is None:
    LOWERINGS.register("aten._safe_softmax.default")(_safe_softmax)
