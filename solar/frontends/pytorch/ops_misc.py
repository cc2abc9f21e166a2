"""Lowerings of ``im2col`` (``F.unfold``), ``col2im`` (``F.fold``), ``trace``,
``_cdist_forward`` and ``_euclidean_dist`` (``torch.cdist``), ``_pdist_forward``
(``torch.pdist``) and ``linalg_cross`` (``torch.linalg.cross``).

Contract: one kernel per call. ``im2col`` writes every column element (zero first where
a window overhangs the padding, then the in-bounds taps under an affine guard, so
only in-bounds input elements are read); ``col2im`` zeroes the image and adds each
in-bounds tap of each column under the same guard; ``trace`` sums the diagonal; ``cdist``
reduces over the feature dim per pair of rows (vector work: ``|a - b|^p`` is not a
product of two operands), for ``p`` in 1, 2, inf or any other positive value;
``pdist`` likewise per pair ``i < j`` of rows (``p = 0`` too, Note [pdist rows]);
``linalg_cross`` writes the three components of each (broadcast) vector pair, two
products and a difference each (9 FLOPs per vector).
"""

from __future__ import annotations

import math

from solar.frontends.kit import (
    Aff,
    Nest,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    expand_param,
    guard,
    iadd_const_last,
    imul_const_last,
    range_guard,
)
from solar.frontends.pytorch.lowering_utils import (
    bcast_index,
    binop,
    fn,
    norm_dim,
    out0,
    scalar_lit,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Access, Assign, Cast, DType, Expr, Reduce, Stmt, lit

__all__: list[str] = []


class _Taps:
    """The unfold geometry im2col and col2im share (``F.unfold``/``F.fold``): a nest over
    ``(n, c, r, s, oh, ow)``, the image position ``(h, w)`` of each tap, its place
    ``(row, col)`` in the column matrix, and the guards keeping ``(h, w)`` in the image."""

    def __init__(self, ctx: LowerCtx, call: OpCall, first: int, image: tuple[int, int],
                 n_ext: int, c_ext: int) -> None:
        names = ("kernel_size", "dilation", "padding", "stride")
        kh, kw = expand_param(call.arg(first, names[0]), 2, names[0])
        dh, dw = expand_param(call.arg(first + 1, names[1]), 2, names[1], default=1)
        ph, pw = expand_param(call.arg(first + 2, names[2]), 2, names[2], default=0)
        sh, sw = expand_param(call.arg(first + 3, names[3]), 2, names[3], default=1)
        h_ext, w_ext = image
        self.window = kh * kw
        self.oh_ext = (h_ext + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        self.ow_ext = (w_ext + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        self.kb = ctx.kernel()
        self.nest = Nest(
            self.kb, (n_ext, c_ext, kh, kw, self.oh_ext, self.ow_ext),
            ("n", "c", "r", "s", "oh", "ow"),
        )
        n, c, r, s, oh, ow = self.nest.idx
        self.n, self.c = n, c
        self.h = Aff.of((sh, oh, self.oh_ext), (dh, r, kh), const=-ph)
        self.w = Aff.of((sw, ow, self.ow_ext), (dw, s, kw), const=-pw)
        self.row = iadd_const_last(
            iadd_const_last(imul_const_last(c, kh * kw), imul_const_last(r, kw)), s
        )
        self.col = iadd_const_last(imul_const_last(oh, self.ow_ext), ow)
        self.conds = range_guard(self.h, h_ext) + range_guard(self.w, w_ext)


@LOWERINGS.register("aten.im2col")
def _im2col(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    if x.rank not in (3, 4):
        raise UnsupportedOpError("im2col of a tensor that is not (N, )C, H, W")
    batched = x.rank == 4
    c_ext, h_ext, w_ext = x.shape[-3:]
    t = _Taps(ctx, call, 1, (h_ext, w_ext), x.shape[0] if batched else 1, c_ext)
    if t.oh_ext * t.ow_ext != out.shape[-1]:
        raise UnsupportedOpError("im2col output size disagrees with its parameters")
    dst = ctx.write(out, [t.n, t.row, t.col] if batched else [t.row, t.col])
    image = [t.c, t.h.expr(), t.w.expr()]
    src = ctx.read(x, [t.n, *image] if batched else image)
    body: list[Stmt] = []
    if t.conds:
        body.append(Assign(dst, scalar_lit(0, out.dtype)))
    body += guard(t.conds, [Assign(dst, cast(src, x.dtype, out.dtype))])
    t.kb.emit(*t.nest.wrap(body))


@LOWERINGS.register("aten.col2im")
def _col2im(ctx: LowerCtx, call: OpCall) -> None:
    """``col2im(self, output_size, kernel_size, dilation, padding, stride)`` (``F.fold``):
    zeros, then each in-bounds tap of each column added at its image position (taps on
    the padding are never read: the guard skips them)."""
    x, out = tensor_arg(call, 0, "self"), out0(call)
    if x.rank not in (2, 3):
        raise UnsupportedOpError("col2im of a tensor that is not (N, )C*kh*kw, L")
    h_ext, w_ext = expand_param(call.arg(1, "output_size"), 2, "output_size")
    batched = x.rank == 3
    n_ext = x.shape[0] if batched else 1
    kh, kw = expand_param(call.arg(2, "kernel_size"), 2, "kernel_size")
    c_ext = x.shape[-2] // (kh * kw)
    t = _Taps(ctx, call, 2, (h_ext, w_ext), n_ext, c_ext)
    if c_ext * t.window != x.shape[-2] or t.oh_ext * t.ow_ext != x.shape[-1]:
        raise UnsupportedOpError("col2im input size disagrees with its parameters")
    zero = Nest(t.kb, (n_ext, c_ext, h_ext, w_ext), ("n", "c", "h", "w"))
    zn, zc, zh, zw = zero.idx
    zeroed = ctx.write(out, [zn, zc, zh, zw] if batched else [zc, zh, zw])
    t.kb.emit(*zero.wrap([Assign(zeroed, scalar_lit(0, out.dtype))]))
    src = ctx.read(x, [t.n, t.row, t.col] if batched else [t.row, t.col])
    image = [t.c, t.h.expr(), t.w.expr()]
    dst = ctx.write(out, [t.n, *image] if batched else image)
    t.kb.emit(*t.nest.wrap(guard(t.conds, [Reduce(dst, "+", cast(src, x.dtype, out.dtype))])))


@LOWERINGS.register("aten.trace")
def _trace(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    if x.rank != 2:
        raise UnsupportedOpError("trace of a tensor that is not a matrix")
    kb = ctx.kernel()
    dst = ctx.write(out, [])
    kb.emit(Assign(dst, scalar_lit(0, out.dtype)))
    diag = Nest(kb, (min(x.shape),))
    if diag.extents[0]:
        i = diag.idx[0]
        kb.emit(*diag.wrap([Reduce(dst, "+", cast(ctx.read(x, [i, i]), x.dtype, out.dtype))]))


@LOWERINGS.register("aten._cdist_forward")
def _cdist(ctx: LowerCtx, call: OpCall) -> None:
    _distances(ctx, call, float(call.arg(2, "p", 2.0)))


@LOWERINGS.register("aten._euclidean_dist")
def _euclidean_dist(ctx: LowerCtx, call: OpCall) -> None:
    """``_euclidean_dist(x1, x2)``: what ``torch.cdist`` runs for ``p = 2`` over more than
    25 rows (its matmul form, ``|a|^2 + |b|^2 - 2 a.b``; the same distances)."""
    _distances(ctx, call, 2.0)


def _distances(ctx: LowerCtx, call: OpCall, p: float) -> None:
    a, b, out = tensor_arg(call, 0, "x1"), tensor_arg(call, 1, "x2"), out0(call)
    if a.rank < 2 or a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-1]:
        raise UnsupportedOpError("cdist of operands with different batch or feature dims")
    if p <= 0 or not out.dtype.is_float or a.shape[-1] == 0:
        raise UnsupportedOpError(f"cdist with p={p}")
    kb = ctx.kernel()
    pairs = Nest(kb, (*a.shape[:-2], a.shape[-2], b.shape[-2]), "i")
    feat = Nest(kb, (a.shape[-1],), "k")
    *bi, i, j = pairs.idx
    k = feat.idx[0]
    dt = accumulate_dtype(out.dtype)
    diff = binop(
        "-",
        cast(ctx.read(a, [*bi, i, k]), a.dtype, dt),
        cast(ctx.read(b, [*bi, j, k]), b.dtype, dt),
    )
    dst = ctx.write(out, [*bi, i, j])
    kb.emit(*pairs.wrap(_p_norm(dst, diff, p, feat, out.dtype)))


def _p_norm(dst: Access, diff: Expr, p: float, feat: Nest, dtype: DType) -> list[Stmt]:
    """``dst = ||diff||_p`` over the loops of ``feat`` (``p`` = 0 counts the nonzeros)."""
    finish: Expr | None = None
    if p == 2.0:
        # ``pow(d, 2)``, not ``d * d``: the IR has no common subexpressions, and the
        # product would count the difference twice (4 FLOPs per feature, not 3).
        term, finish = fn("pow", diff, lit(2.0)), fn("sqrt", dst)
    elif p == 1.0 or math.isinf(p):
        term = fn("abs", diff)
    elif p == 0.0:
        term = Cast(dtype, binop("!=", diff, lit(0.0)))
    else:
        term = fn("pow", fn("abs", diff), lit(p))
        finish = fn("pow", dst, lit(1.0 / p))
    body: list[Stmt] = [
        Assign(dst, scalar_lit(0, dtype)),
        *feat.wrap([Reduce(dst, "max" if math.isinf(p) else "+", term)]),
    ]
    if finish is not None:
        body.append(Assign(dst, finish))
    return body


_PDIST_MAX_ROWS = 256
"""Note [pdist rows]: the most rows ``_pdist_forward`` is lowered for (one nest per row)."""


@LOWERINGS.register("aten._pdist_forward")
def _pdist(ctx: LowerCtx, call: OpCall) -> None:
    """``_pdist_forward(self, p=2)`` (``torch.pdist``): the distance of each pair ``i < j``
    of rows, at position ``i N - i (i + 1) / 2 + j - i - 1`` of the output.

    Note [pdist rows]: that position is quadratic in ``i``, and IR subscripts are affine,
    so each row ``i`` is its own nest ``out[off_i + t] = ||x[i] - x[i + 1 + t]||_p``
    (exact reads and writes, ``N - 1`` nests); above `_PDIST_MAX_ROWS` rows the op is
    left uncovered rather than emit thousands of nests.
    """
    x, out = tensor_arg(call, 0, "self"), out0(call)
    p = float(call.arg(1, "p", 2.0))
    n_rows, m = x.shape if x.rank == 2 else (0, 0)
    if x.rank != 2 or m == 0 or p < 0 or not out.dtype.is_float:
        raise UnsupportedOpError(f"_pdist_forward of shape {x.shape} with p={p}")
    if n_rows > _PDIST_MAX_ROWS:
        raise UnsupportedOpError(f"_pdist_forward of more than {_PDIST_MAX_ROWS} rows")
    kb = ctx.kernel()
    dt = accumulate_dtype(out.dtype)
    offset = 0
    for i in range(n_rows - 1):
        pairs = Nest(kb, (n_rows - 1 - i,), "t")
        feat = Nest(kb, (m,), "k")
        t, k = pairs.idx[0], feat.idx[0]
        diff = binop(
            "-",
            cast(ctx.read(x, [lit(i), k]), x.dtype, dt),
            cast(ctx.read(x, [iadd_const_last(t, i + 1), k]), x.dtype, dt),
        )
        dst = ctx.write(out, [iadd_const_last(t, offset)])
        kb.emit(*pairs.wrap(_p_norm(dst, diff, p, feat, out.dtype)))
        offset += n_rows - 1 - i


@LOWERINGS.register("aten.linalg_cross")
def _cross(ctx: LowerCtx, call: OpCall) -> None:
    """``linalg_cross(self, other, dim=-1)``: both operands broadcast to the output;
    ``out[.., c, ..] = a[.., c+1, ..] * b[.., c+2, ..] - a[.., c+2, ..] * b[.., c+1, ..]``
    (components mod 3) for each vector along ``dim``."""
    a, b, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "other"), out0(call)
    dim = norm_dim(call.arg(2, "dim", -1), out.rank)
    if out.shape[dim] != 3:
        raise UnsupportedOpError("linalg_cross along a dim of size other than 3")
    kb = ctx.kernel()
    batch = Nest(kb, [1 if k == dim else n for k, n in enumerate(out.shape)])

    def at(t: TensorInfo, c: int) -> Expr:
        idx = list(batch.idx)
        idx[dim] = lit(c)
        return cast(ctx.read(t, bcast_index(t.shape, out.shape, idx)), t.dtype, out.dtype)

    body: list[Stmt] = []
    for c in range(3):
        j, k = (c + 1) % 3, (c + 2) % 3
        idx = list(batch.idx)
        idx[dim] = lit(c)
        value = binop("-", binop("*", at(a, j), at(b, k)), binop("*", at(a, k), at(b, j)))
        body.append(Assign(ctx.write(out, idx), value))
    kb.emit(*batch.wrap(body))
