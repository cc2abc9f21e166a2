"""Lowerings of the antialiased resizes ``_upsample_bilinear2d_aa`` and
``_upsample_bicubic2d_aa`` (``F.interpolate(..., antialias=True)``), forward only.

Contract: ``(LowerCtx, OpCall) -> None``; one kernel, separable as eager's CPU kernel:
one pass per resized dim (a dim whose size does not change is skipped, as eager skips
it), the first into a kernel-local buffer. Each output coordinate ``o`` of a dim reads
the taps ``start(o) <= i < end(o)`` of a support-scaled filter (triangle for bilinear,
Keys cubic with ``a = -0.5`` for bicubic; the support widens by the scale when
downsampling), with weights normalised to sum 1.

Note [Antialias taps]
~~~~~~~~~~~~~~~~~~~~~
Eager computes, per dim, ``center = scale (o + 0.5)``, ``start = max(trunc(center -
support + 0.5), 0)`` and ``end = min(trunc(center + support + 0.5), In)`` in float32.
The lowering reproduces those integers here (exactly, in numpy float32) and writes
``start``/``end`` as ``(a o + b) // c`` forms clamped with ``max``/``min``, fitted to
and checked against the table (no fit: `UnsupportedOpError`). The tap loop runs to the
largest tap count under the affine guard ``start(o) + j < end(o)``, so only the taps
eager reads are read and counted (a fixed ``2 ceil(support) + 1`` taps per output would
count a zero-weight tap or more per output). Weights are computed once per (tap,
coordinate) in kernel-locals (the offset ``start - center`` once per coordinate, the
filter argument from it per tap): the filter's branches are value-dependent ``if``s
(their assignments are not counted, their comparisons are), then each weight is divided
by the coordinate's total, as eager does. The two passes are emitted in the cheaper order
(eager resizes the last dim first), so the count never exceeds eager's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from solar.frontends.kit import (
    Sink,
    TensorInfo,
    TensorRef,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    fmax,
    fmin,
    nest,
)
from solar.frontends.pytorch.lowering_utils import fn
from solar.frontends.pytorch.ops_resize import fit_floor_div
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, LoweringFn, OpCall
from solar.ir import Access, Assign, Binary, DType, Expr, If, Reduce, Stmt, lit

__all__: list[str] = []

_f32 = np.float32
_CUBIC_A = -0.5  # eager's antialias filter uses Keys' a = -0.5 (PIL's), not -0.75


WeightTable = Callable[[Expr, Expr], Access]
"""``(tap, coordinate) -> weight access``."""


@dataclass(frozen=True, slots=True)
class _AaDim:
    """One resized dim: tap ranges per output coordinate and the weight tables."""

    n_in: int
    n_out: int
    taps: int  # the most taps any output coordinate reads
    sizes: tuple[int, ...]  # taps per output coordinate
    start: Callable[[Expr], Expr]
    end: Callable[[Expr], Expr]
    weight: WeightTable


def _scale(n_in: int, n_out: int, align: bool, scale: float | None) -> np.float32:
    """Eager's ``area_pixel_compute_scale`` in float32."""
    if align:
        return _f32(_f32(n_in - 1) / _f32(n_out - 1)) if n_out > 1 else _f32(0.0)
    if scale is not None and scale > 0:
        return _f32(1.0 / scale)
    return _f32(_f32(n_in) / _f32(n_out))


def _fit(values: list[int], sc: float, n_in: int, n_out: int, what: str) -> Callable[[Expr], Expr]:
    slopes = [Fraction(n_in, n_out), Fraction(sc).limit_denominator(4 * n_out + 16)]
    fit = fit_floor_div(values, [*dict.fromkeys(slopes), Fraction(sc)])
    if fit is None:
        raise UnsupportedOpError(f"antialiased resize: no integer form of the tap {what}")
    a, b, c = fit

    def expr(o: Expr) -> Expr:
        num: Expr = Binary("+", Binary("*", lit(a), o), lit(b)) if b else Binary("*", lit(a), o)
        if a == 1:
            num = Binary("+", o, lit(b)) if b else o
        return num if c == 1 else Binary("//", num, lit(c))

    return expr


def _filter(kb: Sink, ax: Access, w: Access, cubic: bool) -> list[Stmt]:
    """``w = filter(ax)`` for ``ax = |x|`` (Note [Antialias taps])."""
    one, two = lit(1.0), lit(2.0)
    del kb
    if not cubic:
        return [Assign(w, lit(0.0)), If(Binary("<", ax, one), (Assign(w, Binary("-", one, ax)),))]
    a = _CUBIC_A
    # cubic_convolution1: ((a + 2) x - (a + 3)) x x + 1; cubic_convolution2: ((a x - 5a) x
    # + 8a) x - 4a
    cc1 = Binary(
        "+",
        Binary("*", Binary("*", Binary("-", Binary("*", lit(a + 2), ax), lit(a + 3)), ax), ax),
        one,
    )
    cc2 = Binary(
        "-",
        Binary(
            "*",
            Binary(
                "+", Binary("*", Binary("-", Binary("*", lit(a), ax), lit(5 * a)), ax), lit(8 * a)
            ),
            ax,
        ),
        lit(4 * a),
    )
    return [
        Assign(w, lit(0.0)),
        If(Binary("<", ax, one), (Assign(w, cc1),)),
        If(Binary("and", Binary(">=", ax, one), Binary("<", ax, two)), (Assign(w, cc2),)),
    ]


def _dim(
    kb: Sink,
    n_in: int,
    n_out: int,
    align: bool,
    scale: float | None,
    cubic: bool,
    acc: DType,
) -> _AaDim:
    """Tap ranges (Note [Antialias taps]) and the normalised weight table of one dim."""
    sc = _scale(n_in, n_out, align, scale)
    interp = 4 if cubic else 2
    support = _f32(interp * 0.5 * float(sc)) if sc >= 1.0 else _f32(interp * 0.5)
    max_taps = math.ceil(float(support)) * 2 + 1
    invscale = float(_f32(1.0 / float(sc))) if sc >= 1.0 else 1.0
    lo_raw, hi_raw = [], []
    for oc in range(n_out):
        center = _f32(float(sc) * (oc + 0.5))
        lo_raw.append(math.floor(float(_f32(center - support)) + 0.5))
        hi_raw.append(math.floor(float(_f32(center + support)) + 0.5))
    starts = [max(v, 0) for v in lo_raw]
    sizes = tuple(min(h, n_in) - s for s, h in zip(starts, hi_raw, strict=True))
    if min(sizes) <= 0 or max(sizes) > max_taps:
        raise UnsupportedOpError("antialiased resize: a tap range eager clips")
    lo_fit = _fit(lo_raw, float(sc), n_in, n_out, "start")
    hi_fit = _fit(hi_raw, float(sc), n_in, n_out, "end")

    def start(o: Expr) -> Expr:
        return fmax(lo_fit(o), lit(0)) if min(lo_raw) < 0 else lo_fit(o)

    def end(o: Expr) -> Expr:
        return fmin(hi_fit(o), lit(n_in)) if max(hi_raw) > n_in else hi_fit(o)

    taps = max(sizes)
    wt = kb.local(acc, [taps, n_out], "wt")
    ax = kb.local(acc, [taps, n_out], "ax")
    tot = kb.local(acc, [n_out], "wsum")
    base = kb.local(acc, [n_out], "base")
    (ob,) = kb.fresh_vars(1, "o")
    # base = start - scale (o + 0.5) + 0.5, once per coordinate; x = (base + j) invscale
    shift = Binary(
        "+", Binary("*", lit(float(sc)), cast(ob, DType.I64, acc)), lit(float(sc) * 0.5 - 0.5)
    )
    kb.emit(
        *nest(
            [(ob, n_out)], [Assign(base[ob], Binary("-", cast(start(ob), DType.I64, acc), shift))]
        )
    )
    o, j = kb.fresh_vars(1, "o")[0], kb.fresh_vars(1, "j")[0]
    guard = Binary("<", Binary("+", start(o), j), end(o))
    x: Expr = Binary("+", base[o], cast(j, DType.I64, acc))
    if invscale != 1.0:
        x = Binary("*", x, lit(invscale))
    body: list[Stmt] = [
        Assign(ax[j, o], fn("abs", x)),
        *_filter(kb, ax[j, o], wt[j, o], cubic),
        Reduce(tot[o], "+", wt[j, o]),
    ]
    kb.emit(
        *nest(
            [(o, n_out)], [Assign(tot[o], lit(0.0)), *nest([(j, taps)], [If(guard, tuple(body))])]
        )
    )
    o2, j2 = kb.fresh_vars(1, "o")[0], kb.fresh_vars(1, "j")[0]
    guard2 = Binary("<", Binary("+", start(o2), j2), end(o2))
    norm = Assign(wt[j2, o2], Binary("/", wt[j2, o2], tot[o2]))
    kb.emit(*nest([(o2, n_out), (j2, taps)], [If(guard2, (norm,))]))
    return _AaDim(n_in, n_out, taps, sizes, start, end, lambda t, c: wt[t, c])


def _pass(
    ctx: LowerCtx,
    kb: Sink,
    src: Callable[[list[Expr]], Expr],
    dst: Callable[[list[Expr]], Access],
    shape: list[int],
    axis: int,
    dim: _AaDim,
) -> None:
    """``dst[.., o, ..] = sum_j w[j, o] src[.., start(o) + j, ..]`` over the real taps."""
    names = ctx.vars(kb, len(shape))
    idx: list[Expr] = list(names)
    (j,) = ctx.vars(kb, 1, "j")
    o = idx[axis]
    read = list(idx)
    read[axis] = Binary("+", dim.start(o), j)
    guard = Binary("<", Binary("+", dim.start(o), j), dim.end(o))
    target = dst(list(idx))
    tap = Reduce(target, "+", Binary("*", dim.weight(j, o), src(read)))
    body: list[Stmt] = [Assign(target, lit(0.0)), *nest([(j, dim.taps)], [If(guard, (tap,))])]
    kb.emit(*nest(list(zip(names, shape, strict=True)), body))


@dataclass(frozen=True, slots=True)
class _Buffer:
    """A kernel-local buffer between two passes."""

    ref: TensorRef

    def at(self, idx: list[Expr]) -> Access:
        """The access at ``idx``."""
        return self.ref[tuple(idx)]


def _pass_flops(shape: list[int], axis: int, dim: _AaDim) -> int:
    """FLOPs of one pass (2 per real tap) over ``shape`` with ``axis`` resized."""
    rest = math.prod(n for k, n in enumerate(shape) if k != axis)
    return 2 * rest * sum(dim.sizes)


def _aa_op(cubic: bool) -> LoweringFn:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``_upsample_{bilinear,bicubic}2d_aa(self, output_size, align_corners, scales_h,
        scales_w)`` (``.vec``: ``(input, output_size, align_corners, scale_factors)``)."""
        x, out = (
            call.arg(0, "self" if call.target.endswith(".default") else "input"),
            call.outputs[0],
        )
        if not isinstance(x, TensorInfo) or out is None or x.rank != 4 or 0 in out.shape:
            raise UnsupportedOpError(f"{call.target}: expected a non-empty 4-D input")
        align = bool(call.arg(2, "align_corners"))
        if call.target.endswith(".vec"):
            sf = call.arg(3, "scale_factors")
            scales = [float(v) for v in sf] if sf else [None, None]
        else:
            scales = [call.arg(3, "scales_h"), call.arg(4, "scales_w")]
        acc = accumulate_dtype(out.dtype)
        kb = ctx.kernel(call.op.lstrip("_"))
        resized = [
            (2 + d, _dim(kb, x.shape[2 + d], out.shape[2 + d], align, scales[d], cubic, acc))
            for d in range(2)
            if x.shape[2 + d] != out.shape[2 + d]
        ]
        if len(resized) == 2:
            orders = [resized, resized[::-1]]

            def cost(order: list[tuple[int, _AaDim]]) -> int:
                shape, total = list(x.shape), 0
                for axis, dim in order:
                    shape[axis] = dim.n_out
                    total += _pass_flops(shape, axis, dim)
                return total

            resized = min(orders, key=cost)

        def read_x(idx: list[Expr]) -> Expr:
            return cast(ctx.read(x, idx), x.dtype, acc)

        src: Callable[[list[Expr]], Expr] = read_x
        shape = list(x.shape)
        for k, (axis, dim) in enumerate(resized):
            shape[axis] = dim.n_out
            last = k == len(resized) - 1
            if last and acc == out.dtype:
                _pass(ctx, kb, src, lambda i: ctx.write(out, i), shape, axis, dim)
                return
            buf = _Buffer(kb.local(acc, shape, "tmp"))
            _pass(ctx, kb, src, buf.at, shape, axis, dim)
            src = buf.at
        names = ctx.vars(kb, out.rank)
        idx: list[Expr] = list(names)
        kb.emit(
            *nest(
                list(zip(names, out.shape, strict=True)),
                [Assign(ctx.write(out, idx), cast(src(idx), acc, out.dtype))],
            )
        )

    return lower


LOWERINGS.register("aten._upsample_bilinear2d_aa")(_aa_op(cubic=False))
LOWERINGS.register("aten._upsample_bicubic2d_aa")(_aa_op(cubic=True))
