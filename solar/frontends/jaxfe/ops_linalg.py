"""Lowerings of ``dot_general`` and ``conv_general_dilated``: one kernel each.

Contract: ``EqnCtx -> None``.

* ``dot_general`` (any batch/contracting dims) is ``C = 0; C += A * B`` over the
  contracting dims, the IR the PyTorch frontend emits for ``mm``/``bmm`` (2 FLOPs per
  multiply-add). Without contracting dims it is a plain product (1 FLOP).
* ``conv_general_dilated`` (any dimension numbers, feature/batch groups, strides,
  padding including negative, rhs dilation) is the gather form
  ``Y[n, g*Og + f, o] += X[n, g*Ci + c, s*o + d*r - p] * W[g*Og + f, c, r]`` with a guard
  skipping padded taps, so FLOPs count real taps only. With lhs dilation (transposed
  convolution) and unit strides it is the scatter form ``Y[..., l*i - d*r + p] +=
  X[..., i] * W[..., r]`` after zero-initialising Y, affine and without ``%``, as the
  PyTorch frontend lowers ``conv_transpose``; other lhs-dilated convs guard the
  dilation holes with ``%``. 16/8-bit float results accumulate in an f32 local.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from solar.frontends.jaxfe.core import EqnOperand, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    guard,
    iadd,
    imul,
    range_guard,
    zero,
)
from solar.ir import Access, Assign, Binary, DType, Expr, IntLit, Reduce, Stmt, lit

__all__ = ["ConvGeometry", "conv_specs"]

@LOWERINGS.register("dot_general")
def _dot_general(ctx: EqnCtx) -> None:
    a, b = ctx.ins
    (lc, rc), (lb, rb) = ctx.params["dimension_numbers"]
    lc, rc, lb, rb = (tuple(int(v) for v in t) for t in (lc, rc, lb, rb))
    out_shape = ctx.out_shape(0)
    dtype = ctx.out_dtype(0)
    acc_dtype = accumulate_dtype(dtype)
    out = ctx.out(0)
    kb = ctx.kernel()
    outer = Nest(kb, out_shape, "i")
    inner = Nest(kb, [a.shape[d] for d in lc], "k")
    if outer.empty:
        return
    a_free = [d for d in range(len(a.shape)) if d not in lc and d not in lb]
    b_free = [d for d in range(len(b.shape)) if d not in rc and d not in rb]
    nb = len(lb)

    def index(
        shape: Sequence[int],
        batch: Sequence[int],
        contract: Sequence[int],
        free: Sequence[int],
        free_offset: int,
    ) -> list[Expr]:
        idx: list[Expr] = [IntLit(0)] * len(shape)
        for pos, d in enumerate(batch):
            idx[d] = outer.idx[pos]
        for pos, d in enumerate(contract):
            idx[d] = inner.idx[pos]
        for pos, d in enumerate(free):
            idx[d] = outer.idx[nb + free_offset + pos]
        return idx

    av = cast(read(a, index(a.shape, lb, lc, a_free, 0)), a.dtype, acc_dtype)
    bv = cast(read(b, index(b.shape, rb, rc, b_free, len(a_free))), b.dtype, acc_dtype)
    prod = Binary("*", av, bv)
    tgt = Access(out.ref.name, out.storage_index(outer.idx))
    if not lc:
        kb.emit(*outer.wrap([Assign(tgt, prod)]))
        return
    body = _accumulate(kb, tgt, dtype, outer, inner, prod)
    kb.emit(*outer.wrap(body))


def _accumulate(
    kb: Sink,
    tgt: Access,
    dtype: DType,
    outer: Nest,
    inner: Nest,
    prod: Expr,
    conds: Sequence[Expr] = (),
) -> list[Stmt]:
    """``tgt = 0; tgt += prod`` over ``inner`` (via an f32 local for low precision)."""
    acc_dtype = accumulate_dtype(dtype)
    if acc_dtype != dtype:
        acc_t = kb.local(acc_dtype, [e for _, e in outer.dims], "acc")
        acc = acc_t[tuple(v for v, _ in outer.dims)] if outer.dims else acc_t.scalar()
        red = inner.wrap(guard(conds, [Reduce(acc, "+", prod)])) if not inner.empty else []
        return [Assign(acc, zero(acc_dtype)), *red, Assign(tgt, acc)]
    red = inner.wrap(guard(conds, [Reduce(tgt, "+", prod)])) if not inner.empty else []
    return [Assign(tgt, zero(dtype)), *red]


def conv_specs(ctx: EqnCtx, nd: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``(lhs_spec, rhs_spec, out_spec)``: positions of (batch|out-feature, feature, spatial...)."""
    dn = ctx.params.get("dimension_numbers")
    if dn is None:
        ident = tuple(range(nd + 2))
        return ident, ident, ident
    return tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)


@dataclass(frozen=True, slots=True)
class ConvGeometry:
    """Normalised parameters of one ``conv_general_dilated`` equation.

    Attributes:
        specs: ``(lhs_spec, rhs_spec, out_spec)`` dimension positions.
        strides, pads, ldil, rdil: per spatial dim.
        fg, bg: feature and batch group counts.
        groups: ``max(fg, bg)``; ``per``: output features per group.
        ci: input features per group (the kernel's in-feature extent).
        n_out: output batch; ``in_sp``/``out_sp``/``ker``: spatial extents.
    """

    specs: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
    strides: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    ldil: tuple[int, ...]
    rdil: tuple[int, ...]
    fg: int
    bg: int
    groups: int
    per: int
    ci: int
    n_out: int
    in_sp: tuple[int, ...]
    out_sp: tuple[int, ...]
    ker: tuple[int, ...]

    def assemble(
        self, spec: Sequence[int], first: Expr, second: Expr, sp: Sequence[Expr]
    ) -> list[Expr]:
        """Indices in a layout: ``first`` (batch/out-feature), ``second`` (feature), spatial."""
        idx: list[Expr] = [IntLit(0)] * len(spec)
        idx[spec[0]], idx[spec[1]] = first, second
        for d, e in enumerate(sp):
            idx[spec[2 + d]] = e
        return idx

    def channels(self, n: Expr, gi: Expr, f: Expr, c: Expr) -> tuple[Expr, Expr, Expr]:
        """``(lhs batch, lhs feature, output feature)`` for group ``gi``."""
        feat = iadd(imul(gi, self.per), f)
        batch = iadd(imul(gi, self.n_out), n) if self.bg > 1 else n
        chan = iadd(imul(gi, self.ci), c) if self.fg > 1 else c
        return batch, chan, feat


def _geometry(ctx: EqnCtx, x: EqnOperand, w: EqnOperand) -> ConvGeometry:
    p = ctx.params
    nd = len(x.shape) - 2
    specs = conv_specs(ctx, nd)
    ls, rs, os_ = specs
    fg, bg = int(p.get("feature_group_count", 1)), int(p.get("batch_group_count", 1))
    if fg > 1 and bg > 1:
        raise UnsupportedOpError("feature and batch groups together")
    out_shape = ctx.out_shape(0)
    groups = max(fg, bg)
    return ConvGeometry(
        specs=specs,
        strides=tuple(int(v) for v in p["window_strides"]),
        pads=tuple((int(a), int(b)) for a, b in p["padding"]),
        ldil=tuple(int(v) for v in (p.get("lhs_dilation") or (1,) * nd)),
        rdil=tuple(int(v) for v in (p.get("rhs_dilation") or (1,) * nd)),
        fg=fg,
        bg=bg,
        groups=groups,
        per=out_shape[os_[1]] // groups,
        ci=w.shape[rs[1]],
        n_out=out_shape[os_[0]],
        in_sp=tuple(x.shape[ls[2 + d]] for d in range(nd)),
        out_sp=tuple(out_shape[os_[2 + d]] for d in range(nd)),
        ker=tuple(w.shape[rs[2 + d]] for d in range(nd)),
    )


@LOWERINGS.register("conv_general_dilated")
def _conv(ctx: EqnCtx) -> None:
    x, w = ctx.ins
    g = _geometry(ctx, x, w)
    ls, rs, os_ = g.specs
    dtype = ctx.out_dtype(0)
    acc_dtype = accumulate_dtype(dtype)
    out = ctx.out(0)
    kb = ctx.kernel("conv")
    if any(v > 1 for v in g.ldil) and all(s == 1 for s in g.strides):
        _conv_scatter(ctx, kb, out, g)
        return
    outer = Nest(kb, [g.n_out, g.groups, g.per, *g.out_sp], "o")
    inner = Nest(kb, [g.ci, *g.ker], "r")
    if outer.empty:
        return
    n, gi, f, osp = outer.idx[0], outer.idx[1], outer.idx[2], outer.idx[3:]
    c, taps = inner.idx[0], inner.idx[1:]
    batch, chan, feat = g.channels(n, gi, f, c)
    conds: list[Expr] = []
    src: list[Expr] = []
    for d in range(len(g.in_sp)):
        a = outer.aff(3 + d, g.strides[d]).plus(inner.aff(1 + d, g.rdil[d])).plus(-g.pads[d][0])
        extent = (g.in_sp[d] - 1) * g.ldil[d] + 1 if g.in_sp[d] else 0
        conds += range_guard(a, extent)
        if g.ldil[d] > 1:
            conds.append(Binary("==", Binary("%", a.expr(), lit(g.ldil[d])), IntLit(0)))
            src.append(Binary("//", a.expr(), lit(g.ldil[d])))
        else:
            src.append(a.expr())
    prod = Binary(
        "*",
        cast(read(x, g.assemble(ls, batch, chan, src)), x.dtype, acc_dtype),
        cast(read(w, g.assemble(rs, feat, c, taps)), w.dtype, acc_dtype),
    )
    tgt = Access(out.ref.name, out.storage_index(g.assemble(os_, n, feat, osp)))
    kb.emit(*outer.wrap(_accumulate(kb, tgt, dtype, outer, inner, prod, conds)))


def _conv_scatter(ctx: EqnCtx, kb: Sink, out: TensorInfo, g: ConvGeometry) -> None:
    """Transposed conv (lhs dilation, unit stride): init Y, then scatter-accumulate."""
    ls, rs, os_ = g.specs
    x, w = ctx.ins
    dtype = ctx.out_dtype(0)
    acc_dtype = accumulate_dtype(dtype)
    full = Nest(kb, ctx.out_shape(0), "o")
    if full.empty:
        return
    acc = kb.local(acc_dtype, ctx.out_shape(0), "acc") if acc_dtype != dtype else None

    def store(idx: Sequence[Expr]) -> Access:
        if acc is not None:
            return acc[tuple(idx)]
        return Access(out.ref.name, out.storage_index(idx))

    kb.emit(*full.wrap([Assign(store(full.idx), zero(acc_dtype))]))
    outer = Nest(kb, [g.n_out, g.groups, g.per, *g.in_sp], "i")
    inner = Nest(kb, [g.ci, *g.ker], "r")
    if not outer.empty and not inner.empty:
        n, gi, f, isp = outer.idx[0], outer.idx[1], outer.idx[2], outer.idx[3:]
        c, taps = inner.idx[0], inner.idx[1:]
        batch, chan, feat = g.channels(n, gi, f, c)
        conds: list[Expr] = []
        dst: list[Expr] = []
        for d in range(len(g.in_sp)):
            a = outer.aff(3 + d, g.ldil[d]).plus(inner.aff(1 + d, -g.rdil[d])).plus(g.pads[d][0])
            conds += range_guard(a, g.out_sp[d])
            dst.append(a.expr())
        prod = Binary(
            "*",
            cast(read(x, g.assemble(ls, batch, chan, isp)), x.dtype, acc_dtype),
            cast(read(w, g.assemble(rs, feat, c, taps)), w.dtype, acc_dtype),
        )
        tgt = store(g.assemble(os_, n, feat, dst))
        kb.emit(*outer.wrap(inner.wrap(guard(conds, [Reduce(tgt, "+", prod)]))))
    if acc is not None:
        fin = [Assign(Access(out.ref.name, out.storage_index(full.idx)), acc[tuple(full.idx)])]
        kb.emit(*full.wrap(fin))
