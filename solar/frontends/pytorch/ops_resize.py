"""Lowerings of ATen upsampling ops (nearest, nearest-exact, (bi/tri)linear, bicubic).

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel over the output.
Torch computes source coordinates in float32 from a scale (``In/Out``, ``1/scale_factor``
when the caller gave one, or ``(In-1)/(Out-1)`` with ``align_corners``). Subscripts must
be integer and affine, so each dim's source index is written as ``(a*o + b) // c``
(clamped with ``min``/``max`` where torch clamps), with ``a, b, c`` fitted to torch's
exact float32 index table and checked against it for every output index; a dim that no
such form reproduces raises `UnsupportedOpError`. Interpolation weights are float
values: each dim's weights are computed once per output coordinate into a kernel-local
table (``O(Out)`` work, as torch precomputes them), and the output is the separable
weighted sum of the taps (2 taps per dim for linear, 4 clamped taps for bicubic).

CPU dispatch (torch 2.13): ``F.interpolate`` (and ``nn.Upsample``) reach
``upsample_nearest{1,2,3}d``, ``_upsample_nearest_exact{1,2,3}d``,
``upsample_linear1d``, ``upsample_bilinear2d``, ``upsample_trilinear3d``,
``upsample_bicubic2d`` (``mode="area"`` is ``_adaptive_avg_pool2d``; ``antialias=True``
reaches ``_upsample_bilinear2d_aa``/``_upsample_bicubic2d_aa``, lowered in
ops_resize_aa.py; their backward is not lowered).

Backward (``upsample_*_backward``, a training step): the same taps and weight tables,
transposed: zeros, then each output gradient times each tap's weight added into the
input element the tap reads (one kernel; docs/training.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    fmax,
    fmin,
    iadd,
    imul,
    nest,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, LoweringFn, OpCall
from solar.ir import Assign, Binary, DType, Expr, Reduce, Stmt, lit

__all__ = ["fit_floor_div"]

_f32 = np.float32
_CUBIC_A = -0.75


def fit_floor_div(values: Sequence[int], slopes: Sequence[Fraction]) -> tuple[int, int, int] | None:
    """Find ``(a, b, c)`` with ``values[o] == (a*o + b) // c`` for every ``o``.

    Each candidate slope ``a/c`` is tried in turn; for it, the offsets ``b`` that work
    form an interval, computed exactly. ``None`` when no candidate fits.

    >>> fit_floor_div([0, 0, 1, 2, 2, 3], [Fraction(3, 5)])
    (3, 1, 5)
    """
    n = len(values)
    for slope in slopes:
        for mult in (1, 2):
            a, c = slope.numerator * mult, slope.denominator * mult
            lo = max(c * v - a * o for o, v in enumerate(values))
            hi = min(c * v + c - 1 - a * o for o, v in enumerate(values))
            if lo <= hi:
                b = 0 if lo <= 0 <= hi else lo
                if all((a * o + b) // c == values[o] for o in range(n)):
                    return a, b, c
    return None


def _scale(scale: float | None, n_in: int, n_out: int) -> np.float32:
    """Torch's ``compute_scales_value`` in float32."""
    if scale is not None and scale > 0:
        return _f32(1.0 / scale)
    return _f32(_f32(n_in) / _f32(n_out))


def _slopes(sc: float, n_in: int, n_out: int) -> list[Fraction]:
    cands = [Fraction(n_in, n_out), Fraction(float(sc)).limit_denominator(4 * n_out + 16)]
    return [*dict.fromkeys(cands), Fraction(float(sc))]


def _index_expr(o: Expr, values: Sequence[int], slopes: Sequence[Fraction], what: str) -> Expr:
    fit = fit_floor_div(values, slopes)
    if fit is None:
        raise UnsupportedOpError(f"{what}: no integer index form matches torch's coordinates")
    a, b, c = fit
    num = iadd(imul(a, o), b)
    return num if c == 1 else Binary("//", num, lit(c))


@dataclass(frozen=True, slots=True)
class _Taps:
    """One dim's taps: subscript per tap, and the weight table (``None``: one unweighted tap)."""

    index: Callable[[Expr], list[Expr]]
    weights: Callable[[Expr], list[Expr]] | None
    setup: list[Stmt]


def _nearest(kb: Sink, n_in: int, n_out: int, scale: float | None, exact: bool) -> _Taps:
    if not exact and n_out == n_in:
        return _Taps(lambda o: [o], None, [])
    sc = _scale(scale, n_in, n_out)
    off = _f32(0.5) if exact else _f32(0.0)
    if not exact and n_out == 2 * n_in:
        values = [o >> 1 for o in range(n_out)]
    else:
        values = [min(math.floor(_f32((_f32(o) + off) * sc)), n_in - 1) for o in range(n_out)]
    del kb
    return _Taps(
        lambda o: [_index_expr(o, values, _slopes(float(sc), n_in, n_out), "nearest")], None, []
    )


def _src(sc: np.float32, o: int, align: bool, cubic: bool) -> np.float32:
    """Torch's ``area_pixel_compute_source_index`` in float32."""
    if align:
        return _f32(sc * _f32(o))
    s = _f32(_f32(sc * _f32(_f32(o) + _f32(0.5))) - _f32(0.5))
    return s if cubic or s >= 0 else _f32(0.0)


def _src_expr(sc: np.float32, o: Expr, align: bool, clamp: bool) -> Expr:
    if align:
        return Binary("*", lit(float(sc)), o)
    s = Binary("-", Binary("*", lit(float(sc)), Binary("+", o, lit(0.5))), lit(0.5))
    return fmax(s, lit(0.0)) if clamp else s


def _interp_scale(n_in: int, n_out: int, align: bool, scale: float | None) -> np.float32:
    if align:
        return _f32(_f32(n_in - 1) / _f32(n_out - 1)) if n_out > 1 else _f32(0.0)
    return _scale(scale, n_in, n_out)


def _table(
    kb: Sink,
    rows: int,
    n_out: int,
    acc: DType,
    fill: Callable[[Expr, list[Expr]], list[tuple[int, Expr]]],
) -> tuple[list[Stmt], Callable[[Expr], list[Expr]]]:
    """A local ``[rows, Out]`` weight table; ``fill(o, cells)`` gives ``(row, value)`` in order."""
    tab = kb.local(acc, [rows, n_out], "wt")
    (o,) = kb.fresh_vars(1, "o")
    cells = [tab[k, o] for k in range(rows)]
    setup = nest([(o, n_out)], [Assign(cells[k], v) for k, v in fill(o, list(cells))])
    return setup, lambda oe: [tab[k, oe] for k in range(rows)]


def _guarded_base(
    o: Expr, floors: Sequence[int], slopes: Sequence[Fraction], n_in: int, lo: int | None, what: str
) -> Expr:
    """``min(max(floor(src), lo), In - 1)``, as torch's ``guard_index_and_lambda`` clamps."""
    e = _index_expr(o, floors, slopes, what)
    if lo is not None and min(floors) < lo:
        e = fmax(e, lit(lo))
    return fmin(e, lit(n_in - 1)) if max(floors) > n_in - 1 else e


def _linear(kb: Sink, n_in: int, n_out: int, align: bool, scale: float | None, acc: DType) -> _Taps:
    sc = _interp_scale(n_in, n_out, align, scale)
    # torch clamps a negative source to 0, then i0 = min(floor(src), In - 1),
    # lambda = clamp(src - i0, 0, 1) and i1 = i0 + (i0 < In - 1)
    srcs = [_src(sc, o, align, False) for o in range(n_out)]
    floors = [math.floor(_src(sc, o, align, True)) for o in range(n_out)]
    i0 = [min(max(f, 0), n_in - 1) for f in floors]
    lams = [min(max(float(_f32(v - _f32(i))), 0.0), 1.0) for v, i in zip(srcs, i0, strict=True)]
    slopes = _slopes(float(sc), n_in, n_out)
    if not any(lams):  # integer sources: a copy
        return _Taps(lambda o: [_index_expr(o, i0, slopes, "linear")], None, [])
    clamp_lo = min(floors) < 0

    def first(o: Expr) -> Expr:
        return _guarded_base(o, floors, slopes, n_in, 0, "linear")

    def index(o: Expr) -> list[Expr]:
        second = iadd(first(o), 1)
        return [first(o), fmin(second, lit(n_in - 1)) if max(i0) >= n_in - 1 else second]

    def fill(o: Expr, cells: list[Expr]) -> list[tuple[int, Expr]]:
        lam: Expr = Binary("-", _src_expr(sc, o, align, clamp_lo), first(o))
        if max(floors) > n_in - 1:
            lam = fmin(lam, lit(1.0))
        return [(1, lam), (0, Binary("-", lit(1.0), cells[1]))]

    setup, weights = _table(kb, 2, n_out, acc, fill)
    return _Taps(index, weights, setup)


def _cc1(x: Expr) -> Expr:
    """Torch's ``cubic_convolution1``: ``((A + 2) x - (A + 3)) x x + 1``."""
    a = _CUBIC_A
    inner = Binary("-", Binary("*", lit(a + 2), x), lit(a + 3))
    return Binary("+", Binary("*", Binary("*", inner, x), x), lit(1.0))


def _cc2(x: Expr) -> Expr:
    """Torch's ``cubic_convolution2``: ``((A x - 5A) x + 8A) x - 4A``."""
    a = _CUBIC_A
    inner = Binary("+", Binary("*", Binary("-", Binary("*", lit(a), x), lit(5 * a)), x), lit(8 * a))
    return Binary("-", Binary("*", inner, x), lit(4 * a))


def _cubic(kb: Sink, n_in: int, n_out: int, align: bool, scale: float | None, acc: DType) -> _Taps:
    sc = _interp_scale(n_in, n_out, align, scale)
    floors = [math.floor(_src(sc, o, align, True)) for o in range(n_out)]
    bases = [min(f, n_in - 1) for f in floors]
    slopes = _slopes(float(sc), n_in, n_out)

    def base(o: Expr) -> Expr:
        return _guarded_base(o, floors, slopes, n_in, None, "bicubic")

    def index(o: Expr) -> list[Expr]:
        out = []
        for k in range(4):  # taps base-1 .. base+2, clamped to the input
            e = iadd(base(o), k - 1)
            if min(bases) + k - 1 < 0:
                e = fmax(e, lit(0))
            if max(bases) + k - 1 > n_in - 1:
                e = fmin(e, lit(n_in - 1))
            out.append(e)
        return out

    def fill(o: Expr, cells: list[Expr]) -> list[tuple[int, Expr]]:
        t = cells[4]  # the fractional part of the source coordinate, clamped to [0, 1]
        frac: Expr = Binary("-", _src_expr(sc, o, align, False), base(o))
        if max(floors) > n_in - 1:
            frac = fmin(frac, lit(1.0))
        return [
            (4, frac),
            (0, _cc2(Binary("+", t, lit(1.0)))),
            (1, _cc1(t)),
            (2, _cc1(Binary("-", lit(1.0), t))),
            (3, _cc2(Binary("-", lit(2.0), t))),
        ]

    setup, weights = _table(kb, 5, n_out, acc, fill)
    return _Taps(index, lambda o: weights(o)[:4], setup)


def _emit(
    ctx: LowerCtx,
    call: OpCall,
    nd: int,
    make: Callable[[Sink, int, int, int, DType], _Taps],
) -> None:
    x, out = call.arg(0, "self"), call.outputs[0]
    if not isinstance(x, TensorInfo) or out is None or x.rank < nd + 1:
        raise UnsupportedOpError(f"{call.target}: expected a tensor of rank >= {nd + 1}")
    kb = ctx.kernel(call.op.lstrip("_"))
    acc = accumulate_dtype(out.dtype)
    lead = x.rank - nd
    dims = [make(kb, d, x.shape[lead + d], out.shape[lead + d], acc) for d in range(nd)]
    for t in dims:
        kb.emit(*t.setup)
    outer = Nest(kb, out.shape, ["i"] * lead + list(("d", "h", "w")[3 - nd :]))

    def value(d: int, prefix: list[Expr]) -> Expr:
        if d == nd:
            return cast(ctx.read(x, [*outer.idx[:lead], *prefix]), x.dtype, acc)
        t = dims[d]
        o = outer.idx[lead + d]
        subs = t.index(o)
        if t.weights is None:
            return value(d + 1, [*prefix, subs[0]])
        total: Expr | None = None
        for s, w in zip(subs, t.weights(o), strict=True):
            term = Binary("*", w, value(d + 1, [*prefix, s]))
            total = term if total is None else Binary("+", total, term)
        assert total is not None
        return total

    kb.emit(*outer.wrap([Assign(ctx.write(out, outer.idx), value(0, []))]))


def _scales(call: OpCall, first: int, nd: int) -> list[float | None]:
    if call.target.endswith(".vec"):
        sf = call.arg(first, "scale_factors")
        return [float(v) for v in sf] if sf else [None] * nd
    return [call.arg(first + d, "scales") for d in range(nd)]


def _nearest_op(nd: int, exact: bool, *, backward: bool = False) -> LoweringFn:
    """``upsample_nearest*`` (or its backward: ``grad_output`` first, then the sizes)."""
    emit, first = (_emit_backward, 3) if backward else (_emit, 2)

    def lower(ctx: LowerCtx, call: OpCall) -> None:
        scales = _scales(call, first, nd)
        emit(
            ctx,
            call,
            nd,
            lambda kb, d, n_in, n_out, acc: _nearest(kb, n_in, n_out, scales[d], exact),
        )

    return lower


def _interp_op(nd: int, cubic: bool, *, backward: bool = False) -> LoweringFn:
    """``upsample_{linear,bilinear,trilinear,bicubic}*`` (or their backward)."""
    emit, first = (_emit_backward, 3) if backward else (_emit, 2)

    def lower(ctx: LowerCtx, call: OpCall) -> None:
        align = bool(call.arg(first, "align_corners"))
        scales = _scales(call, first + 1, nd)
        maker = _cubic if cubic else _linear
        emit(
            ctx,
            call,
            nd,
            lambda kb, d, n_in, n_out, acc: maker(kb, n_in, n_out, align, scales[d], acc),
        )

    return lower


for _nd in (1, 2, 3):
    for _exact, _name in ((False, "upsample_nearest"), (True, "_upsample_nearest_exact")):
        LOWERINGS.register(f"aten.{_name}{_nd}d.default", f"aten.{_name}{_nd}d.vec")(
            _nearest_op(_nd, _exact)
        )
for _nd, _name in (
    (1, "upsample_linear1d"),
    (2, "upsample_bilinear2d"),
    (3, "upsample_trilinear3d"),
):
    LOWERINGS.register(f"aten.{_name}.default", f"aten.{_name}.vec")(_interp_op(_nd, False))
LOWERINGS.register("aten.upsample_bicubic2d.default", "aten.upsample_bicubic2d.vec")(
    _interp_op(2, True)
)


def _emit_backward(
    ctx: LowerCtx,
    call: OpCall,
    nd: int,
    make: Callable[[Sink, int, int, int, DType], _Taps],
) -> None:
    """``grad_input = 0``, then ``grad_input[taps(o)] += w(o) * grad_output[o]`` (the
    forward's taps for an input of ``grad_input``'s extents)."""
    g, out = call.arg(0, "grad_output"), call.outputs[0]
    if not isinstance(g, TensorInfo) or out is None or g.rank < nd + 1:
        raise UnsupportedOpError(f"{call.target}: expected a tensor of rank >= {nd + 1}")
    kb = ctx.kernel(call.op.lstrip("_"))
    acc = accumulate_dtype(out.dtype)
    lead = g.rank - nd
    dims = [make(kb, d, out.shape[lead + d], g.shape[lead + d], acc) for d in range(nd)]
    for t in dims:
        kb.emit(*t.setup)
    init = Nest(kb, out.shape, "i")
    kb.emit(*init.wrap([Assign(ctx.write(out, init.idx), lit(0.0))]))
    outer = Nest(kb, g.shape, ["i"] * lead + list(("d", "h", "w")[3 - nd :]))
    taps: list[tuple[list[Expr], Expr | None]] = [([], None)]
    for d, t in enumerate(dims):
        o = outer.idx[lead + d]
        subs = t.index(o)
        weights: list[Expr | None] = list(t.weights(o)) if t.weights else [None] * len(subs)
        taps = [
            ([*prefix, s], w if pw is None else (pw if w is None else Binary("*", pw, w)))
            for prefix, pw in taps
            for s, w in zip(subs, weights, strict=True)
        ]
    gv = kb.local(acc, [], "g").scalar()
    body: list[Stmt] = [Assign(gv, cast(ctx.read(g, outer.idx), g.dtype, acc))]
    for subs, w in taps:
        val: Expr = gv if w is None else Binary("*", w, gv)
        body.append(
            Reduce(ctx.write(out, [*outer.idx[:lead], *subs]), "+", cast(val, acc, out.dtype))
        )
    kb.emit(*outer.wrap(body))


for _nd in (1, 2, 3):
    for _exact, _name in ((False, "upsample_nearest"), (True, "_upsample_nearest_exact")):
        LOWERINGS.register(f"aten.{_name}{_nd}d_backward.default")(
            _nearest_op(_nd, _exact, backward=True)
        )
for _nd, _name in (
    (1, "upsample_linear1d"),
    (2, "upsample_bilinear2d"),
    (3, "upsample_trilinear3d"),
):
    LOWERINGS.register(f"aten.{_name}_backward.default")(_interp_op(_nd, False, backward=True))
LOWERINGS.register("aten.upsample_bicubic2d_backward.default")(_interp_op(2, True, backward=True))
