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

from solar.frontends.jaxfe.core import EqnCtx, Operand, Unsupported, lowering, read
from solar.frontends.jaxfe.index import Nest, guard, iadd, imul, range_guard
from solar.ir import Access, Assign, Binary, Cast, DType, Expr, IntLit, Reduce, Stmt, lit

__all__ = ["conv_specs"]

_LOW = frozenset({DType.F16, DType.BF16, DType.F8E4M3, DType.F8E5M2})


def _acc_dtype(dtype: DType) -> DType:
    return DType.F32 if dtype in _LOW else dtype


def _cast(expr: Expr, src: DType, dst: DType) -> Expr:
    return expr if src == dst else Cast(dst, expr)


def _zero(dtype: DType) -> Expr:
    return lit(0.0) if dtype.is_float else (lit(False) if dtype == DType.BOOL else lit(0))


@lowering("dot_general")
def _dot_general(ctx: EqnCtx) -> None:
    a, b = ctx.ins
    (lc, rc), (lb, rb) = ctx.params["dimension_numbers"]
    lc, rc, lb, rb = (tuple(int(v) for v in t) for t in (lc, rc, lb, rb))
    out_shape = ctx.out_shape(0)
    dtype = ctx.out_dtype(0)
    acc_dtype = _acc_dtype(dtype)
    out = ctx.out(0)
    kb = ctx.kernel()
    outer = Nest(kb, out_shape, "i")
    inner = Nest(kb, [a.shape[d] for d in lc], "k")
    if outer.empty:
        return
    a_free = [d for d in range(len(a.shape)) if d not in lc and d not in lb]
    b_free = [d for d in range(len(b.shape)) if d not in rc and d not in rb]
    nb = len(lb)

    def index(shape: Sequence[int], batch: Sequence[int], contract: Sequence[int],
              free: Sequence[int], free_offset: int) -> list[Expr]:
        idx: list[Expr] = [IntLit(0)] * len(shape)
        for pos, d in enumerate(batch):
            idx[d] = outer.idx[pos]
        for pos, d in enumerate(contract):
            idx[d] = inner.idx[pos]
        for pos, d in enumerate(free):
            idx[d] = outer.idx[nb + free_offset + pos]
        return idx

    av = _cast(read(a, index(a.shape, lb, lc, a_free, 0)), a.dtype, acc_dtype)
    bv = _cast(read(b, index(b.shape, rb, rc, b_free, len(a_free))), b.dtype, acc_dtype)
    prod = Binary("*", av, bv)
    tgt = Access(out.ref.name, out.storage_index(outer.idx))
    if not lc:
        kb.emit(*outer.wrap([Assign(tgt, prod)]))
        return
    body = _accumulate(kb, tgt, dtype, outer, inner, prod)
    kb.emit(*outer.wrap(body))


def _accumulate(
    kb: object, tgt: Access, dtype: DType, outer: Nest, inner: Nest, prod: Expr,
    conds: Sequence[Expr] = (),
) -> list[Stmt]:
    """``tgt = 0; tgt += prod`` over ``inner`` (via an f32 local for low precision)."""
    acc_dtype = _acc_dtype(dtype)
    if acc_dtype != dtype:
        acc_t = kb.local(acc_dtype, [e for _, e in outer.dims] or [], "acc")  # type: ignore[attr-defined]
        acc = acc_t[tuple(v for v, _ in outer.dims)] if outer.dims else acc_t.scalar()
        red = inner.wrap(guard(conds, [Reduce(acc, "+", prod)])) if not inner.empty else []
        return [Assign(acc, _zero(acc_dtype)), *red, Assign(tgt, acc)]
    red = inner.wrap(guard(conds, [Reduce(tgt, "+", prod)])) if not inner.empty else []
    return [Assign(tgt, _zero(dtype)), *red]


def conv_specs(ctx: EqnCtx, nd: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """``(lhs_spec, rhs_spec, out_spec)``: positions of (batch|out-feature, feature, spatial...)."""
    dn = ctx.params.get("dimension_numbers")
    if dn is None:
        ident = tuple(range(nd + 2))
        return ident, ident, ident
    return tuple(dn.lhs_spec), tuple(dn.rhs_spec), tuple(dn.out_spec)


@lowering("conv_general_dilated")
def _conv(ctx: EqnCtx) -> None:
    x, w = ctx.ins
    p = ctx.params
    nd = len(x.shape) - 2
    ls, rs, os_ = conv_specs(ctx, nd)
    strides = tuple(int(v) for v in p["window_strides"])
    pads = tuple((int(a), int(b)) for a, b in p["padding"])
    ldil = tuple(int(v) for v in (p.get("lhs_dilation") or (1,) * nd))
    rdil = tuple(int(v) for v in (p.get("rhs_dilation") or (1,) * nd))
    fg, bg = int(p.get("feature_group_count", 1)), int(p.get("batch_group_count", 1))
    if fg > 1 and bg > 1:
        raise Unsupported("feature and batch groups together")
    out_shape = ctx.out_shape(0)
    n_out, o_feat = out_shape[os_[0]], out_shape[os_[1]]
    ci = w.shape[rs[1]]
    groups = max(fg, bg)
    per = o_feat // groups
    in_sp = [x.shape[ls[2 + d]] for d in range(nd)]
    out_sp = [out_shape[os_[2 + d]] for d in range(nd)]
    ker = [w.shape[rs[2 + d]] for d in range(nd)]
    dtype = ctx.out_dtype(0)
    acc_dtype = _acc_dtype(dtype)
    out = ctx.out(0)
    kb = ctx.kernel("conv")

    def assemble(spec: Sequence[int], first: Expr, second: Expr, sp: Sequence[Expr]) -> list[Expr]:
        idx: list[Expr] = [IntLit(0)] * (nd + 2)
        idx[spec[0]], idx[spec[1]] = first, second
        for d in range(nd):
            idx[spec[2 + d]] = sp[d]
        return idx

    if any(v > 1 for v in ldil) and all(s == 1 for s in strides):
        _conv_scatter(ctx, kb, out, assemble, (ls, rs, os_), groups, per, ci, in_sp, out_sp, ker,
                      pads, ldil, rdil, fg, bg, n_out, acc_dtype)
        return
    outer = Nest(kb, [n_out, groups, per, *out_sp], "o")
    inner = Nest(kb, [ci, *ker], "r")
    if outer.empty:
        return
    n, gi, f, osp = outer.idx[0], outer.idx[1], outer.idx[2], outer.idx[3:]
    c, taps = inner.idx[0], inner.idx[1:]
    feat = iadd(imul(gi, per), f)
    batch = iadd(imul(gi, n_out), n) if bg > 1 else n
    chan = iadd(imul(gi, ci), c) if fg > 1 else c
    conds: list[Expr] = []
    src: list[Expr] = []
    for d in range(nd):
        a = outer.aff(3 + d, strides[d]).plus(inner.aff(1 + d, rdil[d])).plus(-pads[d][0])
        extent = (in_sp[d] - 1) * ldil[d] + 1 if in_sp[d] else 0
        conds += range_guard(a, extent)
        if ldil[d] > 1:
            conds.append(Binary("==", Binary("%", a.expr(), lit(ldil[d])), IntLit(0)))
            src.append(Binary("//", a.expr(), lit(ldil[d])))
        else:
            src.append(a.expr())
    prod = Binary(
        "*",
        _cast(read(x, assemble(ls, batch, chan, src)), x.dtype, acc_dtype),
        _cast(read(w, assemble(rs, feat, c, taps)), w.dtype, acc_dtype),
    )
    tgt = Access(out.ref.name, out.storage_index(assemble(os_, n, feat, osp)))
    kb.emit(*outer.wrap(_accumulate(kb, tgt, dtype, outer, inner, prod, conds)))


def _conv_scatter(
    ctx: EqnCtx, kb: object, out: Operand, assemble: object, specs: tuple[Sequence[int], ...],
    groups: int, per: int, ci: int, in_sp: Sequence[int], out_sp: Sequence[int],
    ker: Sequence[int], pads: Sequence[tuple[int, int]], ldil: Sequence[int],
    rdil: Sequence[int], fg: int, bg: int, n_out: int, acc_dtype: DType,
) -> None:
    """Transposed conv (lhs dilation, unit stride): init Y, then scatter-accumulate."""
    ls, rs, os_ = specs
    x, w = ctx.ins
    dtype = ctx.out_dtype(0)
    nd = len(in_sp)
    full = Nest(kb, ctx.out_shape(0), "o")  # type: ignore[arg-type]
    if full.empty:
        return
    target = out
    acc = None
    if acc_dtype != dtype:
        acc = kb.local(acc_dtype, ctx.out_shape(0), "acc")  # type: ignore[attr-defined]
    def store(idx: Sequence[Expr]) -> Access:
        return acc[tuple(idx)] if acc is not None else Access(target.ref.name, target.storage_index(idx))  # type: ignore[union-attr]

    kb.emit(*full.wrap([Assign(store(full.idx), _zero(acc_dtype))]))  # type: ignore[attr-defined]
    outer = Nest(kb, [n_out, groups, per, *in_sp], "i")  # type: ignore[arg-type]
    inner = Nest(kb, [ci, *ker], "r")  # type: ignore[arg-type]
    if not outer.empty and not inner.empty:
        n, gi, f, isp = outer.idx[0], outer.idx[1], outer.idx[2], outer.idx[3:]
        c, taps = inner.idx[0], inner.idx[1:]
        feat = iadd(imul(gi, per), f)
        batch = iadd(imul(gi, n_out), n) if bg > 1 else n
        chan = iadd(imul(gi, ci), c) if fg > 1 else c
        conds: list[Expr] = []
        dst: list[Expr] = []
        for d in range(nd):
            a = outer.aff(3 + d, ldil[d]).plus(inner.aff(1 + d, -rdil[d])).plus(pads[d][0])
            conds += range_guard(a, out_sp[d])
            dst.append(a.expr())
        prod = Binary(
            "*",
            _cast(read(x, assemble(ls, batch, chan, isp)), x.dtype, acc_dtype),  # type: ignore[operator]
            _cast(read(w, assemble(rs, feat, c, taps)), w.dtype, acc_dtype),  # type: ignore[operator]
        )
        tgt = store(assemble(os_, n, feat, dst))  # type: ignore[operator]
        kb.emit(*outer.wrap(inner.wrap(guard(conds, [Reduce(tgt, "+", prod)]))))  # type: ignore[attr-defined]
    if acc is not None:
        kb.emit(*full.wrap([Assign(Access(target.ref.name, target.storage_index(full.idx)),  # type: ignore[union-attr]
                                   acc[tuple(full.idx)])]))
