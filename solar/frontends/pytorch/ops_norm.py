"""Lowerings of ATen normalisations (batch, layer, group, RMS, weight norm): one kernel each.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel. Statistics live in
kernel-locals (in f32 for 16-bit inputs). Batch and group norm accumulate ``s1 += x;
s2 += x * x`` in one pass (``var = s2/n - mean^2``, ``rstd = rsqrt(var + eps)``) and
write ``Y = X * scale + shift`` with per-channel ``scale``/``shift`` (2 FLOPs per
element, as eager CPU kernels do). Layer norm centres in a second pass into a
kernel-local ``d = X - mean`` that the output ``d * rstd * w + b`` reuses: the same
FLOPs as the one-pass form, without its f32 cancellation. Optional outputs
(``save_mean``, ``save_invstd``, layer norm's ``mean``/``rstd``) are written only when
declared; eval-mode batch norm's empty save tensors are skipped. In-place
running-statistics updates (training batch norm) do not affect the outputs and are not
modelled; the functional variant (``_native_batch_norm_legit_functional``) returns them
and they are written.

Note [one-pass variance]: ``E[x^2] - E[x]^2`` in f32 loses relative accuracy when
``|mean| >> std`` over few elements (e.g. a group of 2 nearly equal values); it is kept
for batch/group norm because it is the FLOP-minimal form (SOL counts must not exceed
what an implementation needs). Switch `_Stats.emit` to two passes if real models fail
validation on it.

CPU dispatch (torch 2.13): ``F.batch_norm``/``nn.BatchNorm*d`` (train and eval) and
``F.instance_norm`` (on a reshaped input) reach ``native_batch_norm``; ``F.layer_norm``
reaches ``native_layer_norm``; ``F.group_norm`` ``native_group_norm``; ``F.rms_norm`` is
decomposed (pow, mean, add, rsqrt, mul) before dispatch, and ``F.local_response_norm``
into pad + ``avg_pool3d`` + elementwise ops.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from solar.ir import Access, Assign, Binary, Call, DType, Expr, Reduce, Stmt, lit

__all__: list[str] = []

_EPS = {
    DType.F64: 2.220446049250313e-16,
    DType.F32: 1.1920928955078125e-07,
    DType.F16: 0.0009765625,
    DType.BF16: 0.0078125,
}


def _tensor(x: object) -> TensorInfo | None:
    return x if isinstance(x, TensorInfo) else None


def _mul(a: Expr, b: Expr) -> Expr:
    return Binary("*", a, b)


class _Stats:
    """Kernel-locals ``mean``/``var``/``rstd`` indexed by a key, and the stats statements.

    Each local is declared on first use, so eval-mode batch norm and RMS norm declare
    only what they touch.
    """

    def __init__(self, kb: Sink, dtype: DType, key_shape: Sequence[int]) -> None:
        self.kb, self.dtype, self.key_shape = kb, dtype, tuple(key_shape)
        self._refs: dict[str, TensorRef] = {}

    def _ref(self, name: str) -> TensorRef:
        if name not in self._refs:
            self._refs[name] = self.kb.local(self.dtype, self.key_shape, name)
        return self._refs[name]

    @property
    def mean(self) -> TensorRef:
        """Per-key mean (RMS norm: mean of squares)."""
        return self._ref("mean")

    @property
    def var(self) -> TensorRef:
        """Per-key biased variance."""
        return self._ref("var")

    @property
    def rstd(self) -> TensorRef:
        """Per-key ``1 / sqrt(var + eps)``."""
        return self._ref("rstd")

    @staticmethod
    def at(t: TensorRef, key: Sequence[Expr]) -> Access:
        return t[tuple(key)] if key else t.scalar()

    def emit(
        self, key: Sequence[Expr], red: Nest, value: Expr, count: int, eps: float
    ) -> list[Stmt]:
        """Statements computing mean, biased variance and rstd of ``value`` over ``red``."""
        m, v, r = self.at(self.mean, key), self.at(self.var, key), self.at(self.rstd, key)
        return [
            Assign(m, lit(0.0)),
            Assign(v, lit(0.0)),
            *red.wrap([Reduce(m, "+", value), Reduce(v, "+", _mul(value, value))]),
            Assign(m, Binary("/", m, lit(float(count)))),
            Assign(v, Binary("-", Binary("/", v, lit(float(count))), _mul(m, m))),
            Assign(r, Call("rsqrt", (Binary("+", v, lit(float(eps))),))),
        ]


def _affine_out(value: Expr, scale: Expr, shift: Expr) -> Expr:
    return Binary("+", _mul(value, scale), shift)


def _param(ctx: LowerCtx, t: TensorInfo | None, idx: Sequence[Expr], acc: DType) -> Expr | None:
    return cast(ctx.read(t, idx), t.dtype, acc) if t is not None else None


def _batch_norm(
    ctx: LowerCtx,
    call: OpCall,
    params: tuple[TensorInfo | None, ...],
    training: bool,
    momentum: float,
    eps: float,
) -> None:
    """Batch norm over dim 1; ``params`` = (input, weight, bias, running_mean, running_var)."""
    x, weight, bias, rmean, rvar = params
    out = call.outputs[0]
    if x is None or out is None or x.rank < 2:
        raise UnsupportedOpError(f"{call.target}: expected an input of rank >= 2")
    outs = list(call.outputs) + [None] * 5
    save_mean, save_rstd = outs[1], outs[2]
    # Only the functional variant returns the updated running statistics.
    new_rm, new_rv = (outs[3], outs[4]) if "functional" in call.target else (None, None)
    kb = ctx.kernel("batch_norm")
    acc = accumulate_dtype(x.dtype)
    c_ext = x.shape[1]
    (c,) = kb.fresh_vars(1, "c")
    count = x.numel // c_ext
    st = _Stats(kb, acc, [c_ext])
    scale = kb.local(acc, [c_ext], "scale")
    shift = kb.local(acc, [c_ext], "shift")

    def xs(nst: Nest) -> Expr:
        return cast(ctx.read(x, [nst.idx[0], c, *nst.idx[1:]]), x.dtype, acc)

    body: list[Stmt] = []
    if training:
        red = Nest(kb, [x.shape[0], *x.shape[2:]], "i")
        body += st.emit([c], red, xs(red), count, eps)
        mean: Expr = st.mean[c]
    else:
        rm, rv = _param(ctx, rmean, [c], acc), _param(ctx, rvar, [c], acc)
        if rm is None or rv is None:
            raise UnsupportedOpError("eval-mode batch norm needs running statistics")
        mean = rm
        body.append(Assign(st.rstd[c], Call("rsqrt", (Binary("+", rv, lit(float(eps))),))))
    w, b = _param(ctx, weight, [c], acc), _param(ctx, bias, [c], acc)
    body.append(Assign(scale[c], _mul(w, st.rstd[c]) if w is not None else st.rstd[c]))
    body.append(
        Assign(shift[c], Binary("-", b if b is not None else lit(0.0), _mul(mean, scale[c])))
    )
    if training:
        if save_mean is not None:
            body.append(Assign(ctx.write(save_mean, [c]), st.mean[c]))
        if save_rstd is not None:
            body.append(Assign(ctx.write(save_rstd, [c]), st.rstd[c]))
        unbiased = _mul(st.var[c], lit(count / max(count - 1, 1)))
        for new, old, stat in ((new_rm, rmean, st.mean[c]), (new_rv, rvar, unbiased)):
            prev = _param(ctx, old, [c], acc)
            if new is not None and prev is not None:
                upd = Binary("+", _mul(lit(1.0 - momentum), prev), _mul(lit(momentum), stat))
                body.append(Assign(ctx.write(new, [c]), upd))
    full = Nest(kb, [x.shape[0], *x.shape[2:]], "i")
    y = ctx.write(out, [full.idx[0], c, *full.idx[1:]])
    body += full.wrap([Assign(y, _affine_out(xs(full), scale[c], shift[c]))])
    kb.emit(*nest([(c, c_ext)], body))


def _t(call: OpCall, i: int, name: str) -> TensorInfo | None:
    return _tensor(call.arg(i, name))


@LOWERINGS.register(
    "aten.native_batch_norm.default",
    "aten._native_batch_norm_legit.default",
    "aten._native_batch_norm_legit_functional.default",
    "aten.cudnn_batch_norm.default",
    "aten.miopen_batch_norm.default",
)
def _native_batch_norm(ctx: LowerCtx, call: OpCall) -> None:
    """``(input, weight, bias, running_mean, running_var, training, momentum, eps)``."""
    params = tuple(
        _t(call, i, n)
        for i, n in enumerate(("input", "weight", "bias", "running_mean", "running_var"))
    )
    _batch_norm(
        ctx,
        call,
        params,
        bool(call.arg(5, "training")),
        float(call.arg(6, "momentum", 0.1)),
        float(call.arg(7, "eps", 1e-5)),
    )


@LOWERINGS.register("aten._native_batch_norm_legit.no_stats")
def _batch_norm_no_stats(ctx: LowerCtx, call: OpCall) -> None:
    """``(input, weight, bias, training, momentum, eps)``: batch statistics only."""
    params = (_t(call, 0, "input"), _t(call, 1, "weight"), _t(call, 2, "bias"), None, None)
    _batch_norm(ctx, call, params, True, float(call.arg(4, "momentum")), float(call.arg(5, "eps")))


@LOWERINGS.register("aten._native_batch_norm_legit_no_training.default")
def _batch_norm_no_training(ctx: LowerCtx, call: OpCall) -> None:
    """``(input, weight, bias, running_mean, running_var, momentum, eps)``: eval mode."""
    params = tuple(
        _t(call, i, n)
        for i, n in enumerate(("input", "weight", "bias", "running_mean", "running_var"))
    )
    _batch_norm(ctx, call, params, False, float(call.arg(5, "momentum")), float(call.arg(6, "eps")))


@LOWERINGS.register("aten.batch_norm.default")
def _batch_norm_composite(ctx: LowerCtx, call: OpCall) -> None:
    """``batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)``."""
    _native_batch_norm(ctx, call)


def _rows(x: TensorInfo, normalized: Sequence[int]) -> int:
    k = len(normalized)
    if k == 0 or k > x.rank or tuple(x.shape[x.rank - k :]) != tuple(normalized):
        raise UnsupportedOpError(f"normalized_shape {tuple(normalized)} does not match {x.shape}")
    return x.rank - k


def _row_norm(ctx: LowerCtx, call: OpCall, *, rms: bool, eps: float | None) -> None:
    """Layer norm (``rms=False``) or RMS norm over the trailing ``normalized_shape`` dims."""
    x, normalized = call.arg(0, "input"), tuple(call.arg(1, "normalized_shape"))
    weight = _t(call, 2, "weight")
    bias = None if rms else _t(call, 3, "bias")
    out = call.outputs[0]
    if not isinstance(x, TensorInfo) or out is None:
        raise UnsupportedOpError(f"{call.target}: tensor input expected")
    lead = _rows(x, normalized)
    if eps is None:
        eps = _EPS.get(x.dtype, _EPS[DType.F32])
    # layer norm: (out, mean, rstd); _fused_rms_norm: (out, rstd)
    extra = [*call.outputs[1:], None, None]
    mean_out, rstd_out = (None, extra[0]) if rms else (extra[0], extra[1])
    kb = ctx.kernel("rms_norm" if rms else "layer_norm")
    acc = accumulate_dtype(x.dtype)
    rows = Nest(kb, x.shape[:lead], "i")
    key = rows.idx
    st = _Stats(kb, acc, x.shape[:lead])
    red = Nest(kb, normalized, "j")
    xv = cast(ctx.read(x, [*key, *red.idx]), x.dtype, acc)
    count = 1
    for d in normalized:
        count *= d
    m, r = st.at(st.mean, key), st.at(st.rstd, key)
    inv = Call(
        "rsqrt",
        (Binary("+", Binary("/", r if not rms else m, lit(float(count))), lit(float(eps))),),
    )
    centered: TensorRef | None = None
    if rms:
        body: list[Stmt] = [
            Assign(m, lit(0.0)),
            *red.wrap([Reduce(m, "+", _mul(xv, xv))]),
            Assign(r, inv),
        ]
    else:
        # Two passes: the centred values stay in a kernel-local that the output reuses, so
        # this costs the FLOPs of the one-pass sum/sum-of-squares form and keeps f32 accuracy.
        centered = kb.local(acc, x.shape, "centered")
        red2 = Nest(kb, normalized, "j")
        d2 = centered[(*key, *red2.idx)]
        x2 = cast(ctx.read(x, [*key, *red2.idx]), x.dtype, acc)
        body = [
            Assign(m, lit(0.0)),
            *red.wrap([Reduce(m, "+", xv)]),
            Assign(m, Binary("/", m, lit(float(count)))),
            Assign(r, lit(0.0)),
            *red2.wrap([Assign(d2, Binary("-", x2, m)), Reduce(r, "+", _mul(d2, d2))]),
            Assign(r, inv),
        ]
    stat_idx = [*key, *([0] * len(normalized))]
    if mean_out is not None:
        body.append(Assign(ctx.write(mean_out, stat_idx), m))
    if rstd_out is not None:
        body.append(Assign(ctx.write(rstd_out, stat_idx), r))
    full = Nest(kb, normalized, "j")
    xo = cast(ctx.read(x, [*key, *full.idx]), x.dtype, acc)
    val = _mul(xo, r) if centered is None else _mul(centered[(*key, *full.idx)], r)
    w, b = _param(ctx, weight, full.idx, acc), _param(ctx, bias, full.idx, acc)
    if w is not None:
        val = _mul(val, w)
    if b is not None:
        val = Binary("+", val, b)
    body += full.wrap([Assign(ctx.write(out, [*key, *full.idx]), val)])
    kb.emit(*rows.wrap(body))


@LOWERINGS.register("aten.native_layer_norm.default", "aten.layer_norm.default")
def _native_layer_norm(ctx: LowerCtx, call: OpCall) -> None:
    """``native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)``."""
    _row_norm(ctx, call, rms=False, eps=float(call.arg(4, "eps", 1e-5)))


@LOWERINGS.register("aten.rms_norm.default", "aten._fused_rms_norm.default")
def _rms_norm(ctx: LowerCtx, call: OpCall) -> None:
    """``rms_norm(input, normalized_shape, weight=None, eps=None)`` (fused: ``-> (out, rstd)``)."""
    eps = call.arg(3, "eps")
    _row_norm(ctx, call, rms=True, eps=None if eps is None else float(eps))


@LOWERINGS.register("aten.native_group_norm.default")
def _native_group_norm(ctx: LowerCtx, call: OpCall) -> None:
    """``native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean, rstd)``."""
    x, weight, bias = call.arg(0, "input"), _t(call, 1, "weight"), _t(call, 2, "bias")
    groups, eps = int(call.arg(6, "group")), float(call.arg(7, "eps"))
    out = call.outputs[0]
    if not isinstance(x, TensorInfo) or out is None or x.rank < 2 or x.shape[1] % groups:
        raise UnsupportedOpError(f"{call.target}: expected [N, C, *] with C divisible by groups")
    mean_out, rstd_out = ([*call.outputs[1:], None, None])[:2]
    kb = ctx.kernel("group_norm")
    acc = accumulate_dtype(x.dtype)
    n_ext, cg = x.shape[0], x.shape[1] // groups
    spatial = list(x.shape[2:])
    outer = Nest(kb, [n_ext, groups], ["n", "g"])
    n, g = outer.idx
    st = _Stats(kb, acc, [n_ext, groups])
    scale = kb.local(acc, [n_ext, x.shape[1]], "scale")
    shift = kb.local(acc, [n_ext, x.shape[1]], "shift")
    red = Nest(kb, [cg, *spatial], ["c"] + ["i"] * len(spatial))
    ch = iadd(imul(g, cg), red.idx[0])
    xv = cast(ctx.read(x, [n, ch, *red.idx[1:]]), x.dtype, acc)
    body = st.emit([n, g], red, xv, cg * (x.numel // (n_ext * x.shape[1])), eps)
    if mean_out is not None:
        body.append(Assign(ctx.write(mean_out, [n, g]), st.mean[n, g]))
    if rstd_out is not None:
        body.append(Assign(ctx.write(rstd_out, [n, g]), st.rstd[n, g]))
    per_c = Nest(kb, [cg], "c")
    cc = iadd(imul(g, cg), per_c.idx[0])
    w, b = _param(ctx, weight, [cc], acc), _param(ctx, bias, [cc], acc)
    sc, sh = scale[n, cc], shift[n, cc]
    body += per_c.wrap(
        [
            Assign(sc, _mul(st.rstd[n, g], w) if w is not None else st.rstd[n, g]),
            Assign(sh, Binary("-", b if b is not None else lit(0.0), _mul(st.mean[n, g], sc))),
        ]
    )
    full = Nest(kb, [cg, *spatial], ["c"] + ["i"] * len(spatial))
    cf = iadd(imul(g, cg), full.idx[0])
    xf = cast(ctx.read(x, [n, cf, *full.idx[1:]]), x.dtype, acc)
    body += full.wrap(
        [
            Assign(
                ctx.write(out, [n, cf, *full.idx[1:]]), _affine_out(xf, scale[n, cf], shift[n, cf])
            )
        ]
    )
    kb.emit(*outer.wrap(body))


@LOWERINGS.register("aten._weight_norm_interface.default")
def _weight_norm_interface(ctx: LowerCtx, call: OpCall) -> None:
    """``_weight_norm_interface(v, g, dim=0) -> (w, norms)``: ``w = v * (g / ||v||)`` with
    the 2-norm over every dim but ``dim`` (eager's fused kernel: ``dim`` is the first or
    the last; ``norms`` has ``g``'s keep-dim shape, f32 for 16-bit ``v``)."""
    v, g = call.arg(0, "v"), call.arg(1, "g")
    dim = int(call.arg(2, "dim", 0))
    out = call.outputs[0]
    if not isinstance(v, TensorInfo) or not isinstance(g, TensorInfo) or out is None:
        raise UnsupportedOpError(f"{call.target}: tensor v and g expected")
    dim = dim % v.rank if v.rank else 0
    norms_out = ([*call.outputs[1:], None])[0]
    kb = ctx.kernel("weight_norm")
    acc = accumulate_dtype(v.dtype)
    outer = Nest(kb, [v.shape[dim]], "c")
    (c,) = outer.idx
    rest = [e for d, e in enumerate(v.shape) if d != dim]

    def at(inner: Sequence[Expr]) -> list[Expr]:
        idx = list(inner)
        idx.insert(dim, c)
        return idx

    keep: list[Expr] = [c if d == dim else lit(0) for d in range(v.rank)]

    def per_channel(t: TensorInfo) -> list[Expr]:
        if t.rank == v.rank:
            return keep
        if t.rank == 1 and t.numel == v.shape[dim]:
            return [c]
        raise UnsupportedOpError(f"{call.target}: g of shape {t.shape} for v of {v.shape}")

    norm = kb.local(acc, [v.shape[dim]], "norm")
    scale = kb.local(acc, [v.shape[dim]], "scale")
    red = Nest(kb, rest, "j")
    vv = cast(ctx.read(v, at(red.idx)), v.dtype, acc)
    gv = cast(ctx.read(g, per_channel(g)), g.dtype, acc)
    body: list[Stmt] = [
        Assign(norm[c], lit(0.0)),
        *red.wrap([Reduce(norm[c], "+", _mul(vv, vv))]),
        Assign(norm[c], Call("sqrt", (norm[c],))),
        Assign(scale[c], Binary("/", gv, norm[c])),
    ]
    if norms_out is not None:
        body.append(Assign(ctx.write(norms_out, per_channel(norms_out)), norm[c]))
    full = Nest(kb, rest, "j")
    vo = cast(ctx.read(v, at(full.idx)), v.dtype, acc)
    body += full.wrap([Assign(ctx.write(out, at(full.idx)), _mul(vo, scale[c]))])
    kb.emit(*outer.wrap(body))
