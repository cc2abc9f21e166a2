"""The convolution emitter: ``conv_general_dilated``, which covers every convolution.

Contract: `emit_conv` emits one kernel for a `ConvSpec` (XLA's general convolution: window
strides, low padding, lhs and rhs dilation, feature or batch groups, any dimension
layout) plus two things PyTorch needs: a bias, and a reversed kernel (a transposed
convolution is a convolution of the lhs-dilated input with the reversed kernel). Two
forms, both affine where they can be:

* gather: ``Y[n, g*Kg + k, o] = bias; Y[n, g*Kg + k, o] += X[n, g*Cg + c, s*o + d*r - p]
  * W[g*Kg + k, c, r]``, guarded to skip taps in the padding (and, with lhs dilation, in
  its holes: ``%`` and ``//``), so FLOPs count real taps only;
* scatter (unit window strides with lhs dilation or a reversed kernel: PyTorch's
  ``conv_transpose``, the input gradient of a strided conv): initialise Y, then
  ``Y[n, g*Kg + k, l*i + d*r - p] += X[n, g*Cg + c, i] * W[..., r]`` guarded to the
  output extent: affine, no ``%``.

`emit_conv_weight_grad` is a convolution's weight gradient as such a convolution, with the
roles swapped (as XLA's autodiff builds it): the windowed operand is the lhs with batch
and feature exchanged, the dense one the kernel, strides and kernel dilation exchanged,
the groups batch groups.

Output extents come from the declared output, so asymmetric padding and PyTorch's
``output_padding`` need nothing special. Low-precision outputs accumulate in an f32
kernel-local (`solar.frontends.kit.accumulate_dtype`). Loop variables are named
``n, g, k, od/oh/ow`` and ``c, r/s/t`` (scatter: ``n, g, c, id/ih/iw`` and ``k, r/s/t``).
No torch, no jax.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from solar.frontends.kit.context import LowerCtx, Sink
from solar.frontends.kit.dtypes import accumulate_dtype, cast, zero
from solar.frontends.kit.emit.operand import Operand
from solar.frontends.kit.emit.window import loop_names, window_source
from solar.frontends.kit.index import Aff, Nest, guard, iadd, imul, range_guard
from solar.frontends.kit.table import UnsupportedOpError
from solar.frontends.kit.values import TensorInfo
from solar.ir import Access, Assign, Binary, Expr, IntLit, Reduce, Stmt

__all__ = ["ConvSpec", "Layout", "emit_conv", "emit_conv_weight_grad"]

Layout = tuple[int | None, ...]
"""Positions of (batch or out-feature, feature, spatial...) in an operand; a ``None``
batch position is an unbatched operand (PyTorch's ``[C, *S]``)."""


@dataclass(frozen=True, slots=True)
class ConvSpec:
    """The parameters of one convolution; per spatial dim unless noted.

    Attributes:
        strides: window strides.
        padding: low padding (negative crops); the high side follows from the output.
        lhs_dilation: input dilation (a transposed conv's stride).
        rhs_dilation: kernel dilation.
        feature_groups / batch_groups: group counts (at most one above 1).
        lhs_layout / rhs_layout / out_layout: positions of (batch | out-feature, feature,
            spatial...); ``None`` is ``(0, 1, 2, ...)``.
        rhs_reversed: the kernel is read reversed along every spatial dim.
        rhs_groups_on: which weight dim holds the group offset: ``"out"`` (XLA and
            PyTorch's forward ``[K, C/g, *R]``) or ``"in"`` (PyTorch's transposed
            weight ``[C, K/g, *R]``).
    """

    strides: tuple[int, ...]
    padding: tuple[int, ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_groups: int = 1
    batch_groups: int = 1
    lhs_layout: Layout | None = None
    rhs_layout: Layout | None = None
    out_layout: Layout | None = None
    rhs_reversed: bool = False
    rhs_groups_on: Literal["out", "in"] = "out"

    @property
    def scatter(self) -> bool:
        """True when lowered in scatter form (unit strides, lhs dilation or reversal)."""
        return all(s == 1 for s in self.strides) and (
            self.rhs_reversed or any(v > 1 for v in self.lhs_dilation)
        )


@dataclass(frozen=True, slots=True)
class _Geometry:
    """Extents and index assembly of one convolution (see `ConvSpec`)."""

    spec: ConvSpec
    layouts: tuple[Layout, Layout, Layout]
    groups: int
    per: int
    ci: int
    n_out: int
    in_sp: tuple[int, ...]
    out_sp: tuple[int, ...]
    ker: tuple[int, ...]

    @staticmethod
    def of(x: Operand, w: Operand, out: TensorInfo, spec: ConvSpec) -> _Geometry:
        nd = len(spec.strides)
        std: Layout = tuple(range(nd + 2))
        ls, rs, os_ = (spec.lhs_layout or std, spec.rhs_layout or std, spec.out_layout or std)
        fg, bg = spec.feature_groups, spec.batch_groups
        if fg > 1 and bg > 1:
            raise UnsupportedOpError("feature and batch groups together")
        groups = max(fg, bg)
        kout, w_in = _extent(out.shape, os_[1]), _extent(w.shape, rs[1])
        ci = w_in // groups if spec.rhs_groups_on == "in" else w_in
        if kout % groups or _extent(x.shape, ls[1]) != ci * fg:
            raise UnsupportedOpError("channels not divisible by groups")
        return _Geometry(
            spec=spec,
            layouts=(ls, rs, os_),
            groups=groups,
            per=kout // groups,
            ci=ci,
            n_out=_extent(out.shape, os_[0]),
            in_sp=tuple(_extent(x.shape, ls[2 + d]) for d in range(nd)),
            out_sp=tuple(_extent(out.shape, os_[2 + d]) for d in range(nd)),
            ker=tuple(_extent(w.shape, rs[2 + d]) for d in range(nd)),
        )

    def index(self, which: int, first: Expr, second: Expr, sp: Sequence[Expr]) -> list[Expr]:
        """Indices in layout ``which`` (0 lhs, 1 rhs, 2 out) of (first, second, spatial)."""
        layout = self.layouts[which]
        idx: list[Expr] = [IntLit(0)] * sum(p is not None for p in layout)
        for pos, e in zip(layout, [first, second, *sp], strict=True):
            if pos is not None:
                idx[pos] = e
        return idx

    def channels(self, n: Expr, gi: Expr, k: Expr, c: Expr) -> tuple[Expr, Expr, Expr, Expr, Expr]:
        """``(lhs batch, lhs feature, out feature, rhs first, rhs second)`` of group ``gi``,
        out-feature ``k`` and in-feature ``c`` within it."""
        spec = self.spec
        feat = iadd(imul(gi, self.per), k)
        batch = iadd(imul(gi, self.n_out), n) if spec.batch_groups > 1 else n
        chan = iadd(imul(gi, self.ci), c) if spec.feature_groups > 1 else c
        if spec.rhs_groups_on == "in":
            return batch, chan, feat, k, iadd(imul(gi, self.ci), c)
        return batch, chan, feat, feat, c


def _extent(shape: Sequence[int], pos: int | None) -> int:
    return 1 if pos is None else shape[pos]


def emit_conv(
    ctx: LowerCtx,
    x: Operand,
    w: Operand,
    out: TensorInfo,
    spec: ConvSpec,
    *,
    bias: Operand | None = None,
    hint: str | None = None,
) -> None:
    """Emit one convolution kernel (gather or scatter form, see the module docstring).

    Args:
        ctx: the lowering context.
        x / w / out: input, kernel and output, laid out as ``spec`` says.
        spec: the convolution's parameters.
        bias: optional ``[K]``, added once per output element.
        hint: the kernel's name (default: ``conv<nd>d`` / ``conv_transpose<nd>d``).

    Raises:
        UnsupportedOpError: inconsistent shapes or groups.
    """
    g = _Geometry.of(x, w, out, spec)
    nd = len(g.in_sp)
    kb = ctx.kernel(hint or (f"conv_transpose{nd}d" if spec.scatter else f"conv{nd}d"))
    dt = accumulate_dtype(out.dtype)
    acc = kb.local(dt, out.shape, "acc") if dt != out.dtype else None

    def store(idx: Sequence[Expr]) -> Access:
        return acc[tuple(idx)] if acc is not None else ctx.write(out, idx)

    def first(feat: Expr) -> Expr:
        return cast(bias.at([feat]), bias.dtype, dt) if bias is not None else zero(dt)

    def product(xi: Sequence[Expr], wi: Sequence[Expr]) -> Expr:
        return Binary("*", cast(x.at(xi), x.dtype, dt), cast(w.at(wi), w.dtype, dt))

    init: list[Stmt] = []  # the scatter form's initialisation (its loops named first: n0, k0)
    if spec.scatter:
        full = Nest(
            kb, [g.n_out, g.per * g.groups, *g.out_sp], ["n", "k", *loop_names(_OUT, nd, "o")]
        )
        at = g.index(2, full.idx[0], full.idx[1], full.idx[2:])
        init = full.wrap([Assign(store(at), first(full.idx[1]))])
    lp = _Loops.of(kb, g, spec.scatter)
    batch, chan, feat, w0, w1 = g.channels(lp.n, lp.gi, lp.k, lp.c)
    conds, pos = _positions(g, lp)
    if spec.scatter:  # X at the loop's input position, Y at the window's
        xi, oi = g.index(0, batch, chan, lp.sp), g.index(2, lp.n, feat, pos)
    else:
        xi, oi = g.index(0, batch, chan, pos), g.index(2, lp.n, feat, lp.sp)
    taps = lp.taps
    if spec.rhs_reversed and not spec.scatter:
        taps = [Aff.of((-1, t, e), const=e - 1).expr() for t, e in zip(taps, g.ker, strict=True)]
    tgt = store(oi)
    red = lp.inner.wrap(guard(conds, [Reduce(tgt, "+", product(xi, g.index(1, w0, w1, taps)))]))
    if not spec.scatter:
        body: list[Stmt] = [Assign(tgt, first(feat)), *red]
        if acc is not None:
            body.append(Assign(ctx.write(out, oi), tgt))
        kb.emit(*lp.outer.wrap(body))
        return
    kb.emit(*init, *lp.outer.wrap(red))
    if acc is not None:
        fin = Nest(kb, list(out.shape), "i")
        kb.emit(*fin.wrap([Assign(ctx.write(out, fin.idx), acc[tuple(fin.idx)])]))


def emit_conv_weight_grad(
    ctx: LowerCtx,
    dense: Operand,
    windowed: Operand,
    dw: TensorInfo,
    *,
    strides: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    hint: str | None = None,
) -> None:
    """Emit the weight gradient of a convolution (``dense``, ``windowed``: ``[N, G*A, *O]``
    and ``[N, G*B, *I]``; ``dw``: ``[G*A, B, *R]``; the forward's ``strides``,
    ``padding``, ``dilation`` and ``groups``):
    ``dW[g*A + a, b, r] = sum_{n, o} D[n, g*A + a, o] * Wn[n, g*B + b, s*o + d*r - p]``.

    That is `emit_conv` in gather form over an output ``[B, G*A, *R]`` laid out as ``dw``
    (batch ``b``, feature ``g*A + a``), lhs ``Wn`` with ``n`` as its feature and its
    channel as the batch (``batch_groups = G``), kernel ``D`` (out-feature its channel,
    in-feature ``n``, taps ``o``), window strides ``d`` and kernel dilation ``s``. A
    convolution's is ``dense = dY``, ``windowed = X``; a transposed convolution's
    ``dense = X``, ``windowed = dY`` (its weight is ``[C, K/G, *R]``).
    """
    nd = len(strides)
    spatial = tuple(range(2, nd + 2))
    spec = ConvSpec(
        strides=dilation,
        padding=padding,
        lhs_dilation=(1,) * nd,
        rhs_dilation=strides,
        batch_groups=groups,
        lhs_layout=(1, 0, *spatial),
        rhs_layout=(1, 0, *spatial),
        out_layout=(1, 0, *spatial),
    )
    emit_conv(ctx, windowed, dense, dw, spec, hint=hint)


_OUT = ("od", "oh", "ow")
_IN = ("id", "ih", "iw")
_TAPS = ("r", "s", "t")


@dataclass(frozen=True, slots=True)
class _Loops:
    """The loop nests of one convolution and the indices they give.

    Gather form: ``outer`` over (batch, group, out-feature, output position), ``inner``
    over (in-feature, taps); scatter form: ``outer`` over (batch, group, in-feature,
    input position), ``inner`` over (out-feature, taps). ``sp`` is the outer position.
    """

    outer: Nest
    inner: Nest
    n: Expr
    gi: Expr
    k: Expr
    c: Expr
    sp: list[Expr]
    taps: list[Expr]

    @staticmethod
    def of(kb: Sink, g: _Geometry, scatter: bool) -> _Loops:
        nd = len(g.in_sp)
        taps = loop_names(_TAPS, nd, "r", last=False)
        if scatter:
            outer = Nest(
                kb, [g.n_out, g.groups, g.ci, *g.in_sp], ["n", "g", "c", *loop_names(_IN, nd, "i")]
            )
            inner = Nest(kb, [g.per, *g.ker], ["k", *taps])
            k, c = inner.idx[0], outer.idx[2]
        else:
            outer = Nest(
                kb,
                [g.n_out, g.groups, g.per, *g.out_sp],
                ["n", "g", "k", *loop_names(_OUT, nd, "o")],
            )
            inner = Nest(kb, [g.ci, *g.ker], ["c", *taps])
            k, c = outer.idx[2], inner.idx[0]
        return _Loops(outer, inner, outer.idx[0], outer.idx[1], k, c, outer.idx[3:], inner.idx[1:])


def _positions(g: _Geometry, lp: _Loops) -> tuple[list[Expr], list[Expr]]:
    """``(guards, window position per spatial dim)``: the input position a gather reads
    (`window_source`), or the output position a scatter writes."""
    spec = g.spec
    conds: list[Expr] = []
    pos: list[Expr] = []
    for d in range(len(g.in_sp)):
        rd = spec.rhs_dilation[d]
        if not spec.scatter:
            a = lp.outer.aff(3 + d, spec.strides[d]).plus(lp.inner.aff(1 + d, rd))
            cs, e = window_source(a.plus(-spec.padding[d]), g.in_sp[d], spec.lhs_dilation[d])
            conds += cs
            pos.append(e)
            continue
        # o = l*i - d*r + p; with the kernel reversed (r -> K-1-r): l*i + d*r + p - d*(K-1)
        coef, const = (
            (rd, spec.padding[d] - rd * (g.ker[d] - 1))
            if spec.rhs_reversed
            else (-rd, spec.padding[d])
        )
        a = lp.outer.aff(3 + d, spec.lhs_dilation[d]).plus(lp.inner.aff(1 + d, coef)).plus(const)
        conds += range_guard(a, g.out_sp[d])
        pos.append(a.expr())
    return conds, pos
