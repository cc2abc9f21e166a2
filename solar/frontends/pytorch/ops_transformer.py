"""Lowerings of PyTorch's fused inference fast paths for MHA and transformer encoder layers.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel. In eval mode
without autograd (how SOLAR captures), ``nn.MultiheadAttention(batch_first=True)`` on
self-attention reaches ``_native_multi_head_attention`` and ``nn.TransformerEncoderLayer``
reaches ``_transformer_encoder_layer_fwd``, each a single ATen call. Eager runs several
internal kernels for each; one SOLAR kernel keeps every intermediate (the QKV
projection, per-head attention, residuals, FFN hidden layer) in kernel-locals, which
can only lower the byte count, so the bound stays a lower bound. FLOPs are exact:
projections are ``y = b + x W^T``, attention is `emit_attention`, layer norms and the
FFN activation (ReLU, or exact-erf GELU with ``use_gelu``) are elementwise.

Masks reach these ops as additive float masks (torch converts boolean masks first):
``mask_type`` 0 is ``[L, S]``, 1 a key-padding mask ``[B, S]``, 2 ``[B, H, L, S]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

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
from solar.frontends.pytorch.ops_attention import Attention, emit_attention
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Binary, Call, DType, Expr, Reduce, lit

__all__: list[str] = []


def _local(kb: Sink, dtype: DType, shape: Sequence[int], hint: str) -> TensorInfo:
    """A kernel-local wrapped as a `TensorInfo`, so the emitters can read and write it."""
    ref = kb.local(dtype, shape, hint)
    return TensorInfo(ref, tuple(shape), dtype)


def _read(ctx: LowerCtx, t: TensorInfo, idx: Sequence[Expr], acc: DType) -> Expr:
    return cast(ctx.read(t, idx), t.dtype, acc)


def _linear(
    ctx: LowerCtx,
    kb: Sink,
    x: TensorInfo,
    w: TensorInfo,
    b: TensorInfo | None,
    y: TensorInfo,
    *,
    row0: int = 0,
) -> None:
    """``y[..., f] = b[row0 + f] + sum_e x[..., e] * w[row0 + f, e]``."""
    acc = accumulate_dtype(y.dtype)
    rows = Nest(kb, y.shape, ["i"] * (y.rank - 1) + ["f"])
    (e,) = kb.fresh_vars(1, "e")
    f = iadd(rows.idx[-1], row0)
    tgt = ctx.write(y, rows.idx)
    init = _read(ctx, b, [f], acc) if b is not None else lit(0.0)
    prod = Binary("*", _read(ctx, x, [*rows.idx[:-1], e], acc), _read(ctx, w, [f, e], acc))
    kb.emit(*rows.wrap([Assign(tgt, init), *nest([(e, x.shape[-1])], [Reduce(tgt, "+", prod)])]))


def _layer_norm(
    ctx: LowerCtx,
    kb: Sink,
    x: TensorInfo,
    w: TensorInfo,
    b: TensorInfo,
    eps: float,
    y: TensorInfo,
) -> None:
    """Two-pass layer norm over the last dim of ``x`` into ``y`` (as ops_norm.py)."""
    acc = accumulate_dtype(y.dtype)
    rows = Nest(kb, x.shape[:-1], "i")
    n = x.shape[-1]
    mean = kb.local(acc, x.shape[:-1], "mean")
    rstd = kb.local(acc, x.shape[:-1], "rstd")
    centered = kb.local(acc, x.shape, "centered")
    m, r = mean[tuple(rows.idx)], rstd[tuple(rows.idx)]
    j, j2, j3 = kb.fresh_vars(3, "j")
    d2, d3 = centered[(*rows.idx, j2)], centered[(*rows.idx, j3)]
    inv = Call("rsqrt", (Binary("+", Binary("/", r, lit(float(n))), lit(float(eps))),))
    y_val = Binary(
        "+", Binary("*", Binary("*", d3, r), _read(ctx, w, [j3], acc)), _read(ctx, b, [j3], acc)
    )
    body = [
        Assign(m, lit(0.0)),
        *nest([(j, n)], [Reduce(m, "+", _read(ctx, x, [*rows.idx, j], acc))]),
        Assign(m, Binary("/", m, lit(float(n)))),
        Assign(r, lit(0.0)),
        *nest(
            [(j2, n)],
            [
                Assign(d2, Binary("-", _read(ctx, x, [*rows.idx, j2], acc), m)),
                Reduce(r, "+", Binary("*", d2, d2)),
            ],
        ),
        Assign(r, inv),
        *nest([(j3, n)], [Assign(ctx.write(y, [*rows.idx, j3]), y_val)]),
    ]
    kb.emit(*rows.wrap(body))


def _pointwise(ctx: LowerCtx, kb: Sink, y: TensorInfo, fn: Callable[[list[Expr]], Expr]) -> None:
    nst = Nest(kb, y.shape, "i")
    kb.emit(*nst.wrap([Assign(ctx.write(y, nst.idx), fn(nst.idx))]))


def _mha(
    ctx: LowerCtx,
    kb: Sink,
    q: TensorInfo,
    k: TensorInfo,
    v: TensorInfo,
    heads: int,
    qkv_w: TensorInfo,
    qkv_b: TensorInfo | None,
    proj_w: TensorInfo,
    proj_b: TensorInfo | None,
    mask: TensorInfo | None,
    mask_type: int | None,
    out: TensorInfo,
    weights: TensorInfo | None = None,
    average: bool = True,
) -> None:
    """Multi-head self/cross attention with packed in-projection, into ``out [B, L, E]``."""
    bsz, n_q, emb = q.shape
    n_k = k.shape[1]
    if emb % heads:
        raise UnsupportedOpError("embed_dim not divisible by num_heads")
    dh = emb // heads
    acc = accumulate_dtype(out.dtype)
    if q.ref.name == k.ref.name == v.ref.name and q.shape == k.shape:
        packed = _local(kb, acc, [bsz, n_q, 3 * emb], "qkv")
        _linear(ctx, kb, q, qkv_w, qkv_b, packed)
        qs = ks = vs = packed
        offs = (0, emb, 2 * emb)
    else:
        qs = _local(kb, acc, [bsz, n_q, emb], "q_proj")
        ks = _local(kb, acc, [bsz, n_k, emb], "k_proj")
        vs = _local(kb, acc, [bsz, n_k, emb], "v_proj")
        for part, (src, dst) in enumerate(((q, qs), (k, ks), (v, vs))):
            _linear(ctx, kb, src, qkv_w, qkv_b, dst, row0=part * emb)
        offs = (0, 0, 0)

    def view(t: TensorInfo, n: int, col0: int) -> TensorInfo:
        return t.view(
            [bsz, heads, n, dh], lambda i: (i[0], i[2], iadd(iadd(imul(i[1], dh), i[3]), col0))
        )

    attn = _local(kb, acc, [bsz, n_q, emb], "attn")
    probs = _local(kb, acc, [bsz, heads, n_q, n_k], "probs") if weights is not None else None
    m4 = None
    if mask is not None:
        if mask_type == 1 or (mask.rank == 2 and mask.shape == (bsz, n_k) and mask_type is None):
            m4 = mask.view([bsz, 1, 1, n_k], lambda i: (i[0], i[3]))
        else:
            m4 = mask
    emit_attention(
        ctx,
        kb,
        Attention(
            view(qs, n_q, offs[0]),
            view(ks, n_k, offs[1]),
            view(vs, n_k, offs[2]),
            view(attn, n_q, 0),
            mask=m4,
            scale=1.0 / math.sqrt(dh),
            weights=probs,
        ),
    )
    _linear(ctx, kb, attn, proj_w, proj_b, out)
    if weights is not None and probs is not None:
        if average:
            (h,) = kb.fresh_vars(1, "h")
            nst = Nest(kb, weights.shape, "i")
            tgt = ctx.write(weights, nst.idx)
            kb.emit(
                *nst.wrap(
                    [
                        Assign(tgt, lit(0.0)),
                        *nest(
                            [(h, heads)],
                            [Reduce(tgt, "+", ctx.read(probs, [nst.idx[0], h, *nst.idx[1:]]))],
                        ),
                        Assign(tgt, Binary("/", tgt, lit(float(heads)))),
                    ]
                )
            )
        else:
            _pointwise(ctx, kb, weights, lambda i: ctx.read(probs, i))


def _t(x: object) -> TensorInfo:
    if not isinstance(x, TensorInfo):
        raise UnsupportedOpError("tensor argument expected")
    return x


def _opt(x: object) -> TensorInfo | None:
    return x if isinstance(x, TensorInfo) else None


@LOWERINGS.register("aten._native_multi_head_attention.default")
def _native_mha(ctx: LowerCtx, call: OpCall) -> None:
    """``(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
    mask=None, need_weights=True, average_attn_weights=True, mask_type=None) -> (out, weights)``.
    """
    a = call.arg
    q, k, v = _t(a(0, "query")), _t(a(1, "key")), _t(a(2, "value"))
    out = call.outputs[0]
    if out is None or q.rank != 3:
        raise UnsupportedOpError("_native_multi_head_attention: batched [B, L, E] input expected")
    weights = call.outputs[1] if len(call.outputs) > 1 and a(10, "need_weights", True) else None
    kb = ctx.kernel("multi_head_attention")
    _mha(
        ctx,
        kb,
        q,
        k,
        v,
        int(a(4, "num_head")),
        _t(a(5, "qkv_weight")),
        _opt(a(6, "qkv_bias")),
        _t(a(7, "proj_weight")),
        _opt(a(8, "proj_bias")),
        _opt(a(9, "mask")),
        a(12, "mask_type"),
        out,
        weights,
        bool(a(11, "average_attn_weights", True)),
    )


@LOWERINGS.register("aten._transformer_encoder_layer_fwd.default")
def _encoder_layer(ctx: LowerCtx, call: OpCall) -> None:
    """``(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
    norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
    ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None)``.
    """
    a = call.arg
    src, out = _t(a(0, "src")), call.outputs[0]
    if out is None or src.rank != 3:
        raise UnsupportedOpError("_transformer_encoder_layer_fwd: batched [B, L, E] input expected")
    heads, use_gelu, norm_first, eps = (
        int(a(2, "num_heads")),
        bool(a(7, "use_gelu")),
        bool(a(8, "norm_first")),
        float(a(9, "eps")),
    )
    n1w, n1b, n2w, n2b = (
        _t(a(i, n))
        for i, n in (
            (10, "norm_weight_1"),
            (11, "norm_bias_1"),
            (12, "norm_weight_2"),
            (13, "norm_bias_2"),
        )
    )
    w1, b1, w2, b2 = (
        _t(a(14, "ffn_weight_1")),
        _opt(a(15, "ffn_bias_1")),
        _t(a(16, "ffn_weight_2")),
        _opt(a(17, "ffn_bias_2")),
    )
    kb = ctx.kernel("transformer_encoder_layer")
    acc = accumulate_dtype(out.dtype)
    shape = src.shape
    hidden = w1.shape[0]

    def mha(x: TensorInfo, y: TensorInfo) -> None:
        _mha(
            ctx,
            kb,
            x,
            x,
            x,
            heads,
            _t(a(3, "qkv_weight")),
            _opt(a(4, "qkv_bias")),
            _t(a(5, "proj_weight")),
            _opt(a(6, "proj_bias")),
            _opt(a(18, "mask")),
            a(19, "mask_type"),
            y,
        )

    def ffn(x: TensorInfo, y: TensorInfo) -> None:
        h = _local(kb, acc, [*shape[:-1], hidden], "ffn_hidden")
        _linear(ctx, kb, x, w1, b1, h)

        def act(i: list[Expr]) -> Expr:
            hv = ctx.read(h, i)
            if use_gelu:  # exact GELU: 0.5 x (1 + erf(x / sqrt(2)))
                erf = Call("erf", (Binary("*", hv, lit(1 / math.sqrt(2))),))
                return Binary("*", Binary("*", lit(0.5), hv), Binary("+", lit(1.0), erf))
            return Call("max", (hv, lit(0.0)))

        _pointwise(ctx, kb, h, act)
        _linear(ctx, kb, h, w2, b2, y)

    def add(x: TensorInfo, y: TensorInfo, dst: TensorInfo) -> None:
        _pointwise(
            ctx, kb, dst, lambda i: Binary("+", _read(ctx, x, i, acc), _read(ctx, y, i, acc))
        )

    att = _local(kb, acc, shape, "sa")
    res1 = _local(kb, acc, shape, "res1")
    ff = _local(kb, acc, shape, "ff")
    if norm_first:
        n1 = _local(kb, acc, shape, "norm1")
        _layer_norm(ctx, kb, src, n1w, n1b, eps, n1)
        mha(n1, att)
        add(src, att, res1)
        n2 = _local(kb, acc, shape, "norm2")
        _layer_norm(ctx, kb, res1, n2w, n2b, eps, n2)
        ffn(n2, ff)
        add(res1, ff, out)
    else:
        mha(src, att)
        s1 = _local(kb, acc, shape, "sum1")
        add(src, att, s1)
        _layer_norm(ctx, kb, s1, n1w, n1b, eps, res1)
        ffn(res1, ff)
        s2 = _local(kb, acc, shape, "sum2")
        add(res1, ff, s2)
        _layer_norm(ctx, kb, s2, n2w, n2b, eps, out)
