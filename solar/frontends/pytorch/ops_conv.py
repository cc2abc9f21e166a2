"""Lowerings of ATen convolutions (1-3D, grouped, dilated, transposed): one kernel each.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel. A forward conv is
the gather form ``Y[n, k, o] = bias[k]; Y[n, k, o] += X[n, g*Cg + c, s*o + d*r - p] *
W[k, c, r]`` with a guard that skips taps in the zero padding (so FLOPs count real taps
only). A transposed conv is the scatter form ``Y[n, k, s*i + d*r - p] += X[n, c, i] *
W[c, k, r]`` after initialising Y, guarded to the output extent: affine, no ``%``. The
output extent comes from the declared output, so asymmetric ("same") padding and
``output_padding`` need no special casing. Low-precision outputs accumulate in an f32
kernel-local, as eager kernels do. Padding modes other than zeros arrive as a separate
pad op (``reflection_pad2d``...) before ``convolution``.

CPU dispatch (torch 2.13): ``F.conv*d``/``F.conv_transpose*d``/``nn.Conv*d`` all reach
``aten.convolution.default``; the backend ops below it (``mkldnn_convolution``,
``_slow_conv2d_forward``, cuDNN...) are registered too for captures that see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from solar.frontends.kit import (
    Aff,
    Nest,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    expand_param,
    guard,
    iadd,
    imul,
    range_guard,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Access, Assign, Binary, Expr, Reduce, Stmt, lit

__all__ = ["ConvSpec", "emit_conv"]

_SP = ("od", "oh", "ow")
_ISP = ("id", "ih", "iw")
_TAPS = ("r", "s", "t")


@dataclass(frozen=True, slots=True)
class ConvSpec:
    """Normalised convolution parameters (per spatial dim)."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool
    groups: int


def _spec(
    weight: TensorInfo,
    stride: object,
    padding: object,
    dilation: object,
    transposed: bool,
    groups: int,
) -> ConvSpec:
    nd = weight.rank - 2
    if nd < 1:
        raise UnsupportedOpError("convolution weight must have rank >= 3")
    if isinstance(padding, str):
        if padding == "valid":
            pad: tuple[int, ...] = (0,) * nd
        elif padding == "same":
            dil = expand_param(dilation, nd, "dilation", 1)  # type: ignore[arg-type]
            # torch pads total = d * (k - 1), the smaller half first.
            pad = tuple(d * (k - 1) // 2 for d, k in zip(dil, weight.shape[2:], strict=True))
        else:
            raise UnsupportedOpError(f"unknown padding mode {padding!r}")
    else:
        pad = expand_param(padding, nd, "padding", 0)  # type: ignore[arg-type]
    return ConvSpec(
        stride=expand_param(stride, nd, "stride", 1),  # type: ignore[arg-type]
        padding=pad,
        dilation=expand_param(dilation, nd, "dilation", 1),  # type: ignore[arg-type]
        transposed=bool(transposed),
        groups=int(groups),
    )


def emit_conv(
    ctx: LowerCtx,
    x: TensorInfo,
    w: TensorInfo,
    bias: TensorInfo | None,
    out: TensorInfo,
    spec: ConvSpec,
) -> None:
    """Emit one convolution kernel (forward or transposed) into ``ctx``.

    Args:
        ctx: lowering context.
        x: input ``[N, C, *S]`` (or unbatched ``[C, *S]``).
        w: weight ``[K, C/g, *R]`` (forward) or ``[C, K/g, *R]`` (transposed).
        bias: optional ``[K]``.
        out: output ``[N, K, *O]`` (or ``[K, *O]``).
        spec: stride/padding/dilation/groups.

    Raises:
        UnsupportedOpError: inconsistent shapes.
    """
    nd = w.rank - 2
    batched = x.rank == nd + 2
    if not batched and x.rank != nd + 1:
        raise UnsupportedOpError(f"conv input rank {x.rank} does not match weight rank {w.rank}")
    g = spec.groups
    cin = x.shape[1 if batched else 0]
    kout = out.shape[1 if batched else 0]
    if cin % g or kout % g:
        raise UnsupportedOpError("channels not divisible by groups")
    cg, kg = cin // g, kout // g
    n_ext = x.shape[0] if batched else 1
    in_sp, out_sp, ker = x.shape[-nd:], out.shape[-nd:], w.shape[2:]
    kb = ctx.kernel(f"conv_transpose{nd}d" if spec.transposed else f"conv{nd}d")
    acc_dtype = accumulate_dtype(out.dtype)
    acc = kb.local(acc_dtype, out.shape, "acc") if acc_dtype != out.dtype else None

    def out_at(n: Expr, k: Expr, sp: Sequence[Expr]) -> Access:
        idx = [n, k, *sp] if batched else [k, *sp]
        return acc[tuple(idx)] if acc is not None else ctx.write(out, idx)

    def x_at(n: Expr, c: Expr, sp: Sequence[Expr]) -> Expr:
        return ctx.read(x, [n, c, *sp] if batched else [c, *sp])

    def init(nn: Nest) -> list[Stmt]:
        # Y = bias (or 0) over the whole output.
        k = nn.idx[1]
        value: Expr = (
            cast(ctx.read(bias, [k]), bias.dtype, acc_dtype) if bias is not None else lit(0.0)
        )
        return nn.wrap([Assign(out_at(nn.idx[0], k, nn.idx[2:]), value)])

    if not spec.transposed:
        # n, group, channel-in-group, spatial... ; reduce over c, taps.
        outer = Nest(kb, [n_ext, g, kg, *out_sp], ["n", "g", "k", *_SP[3 - nd :]])
        inner = Nest(kb, [cg, *ker], ["c", *_TAPS[:nd]])
        n, gi, ki, osp = outer.idx[0], outer.idx[1], outer.idx[2], outer.idx[3:]
        c, taps = inner.idx[0], inner.idx[1:]
        kk = iadd(imul(gi, kg), ki)
        conds: list[Expr] = []
        src: list[Expr] = []
        for dim in range(nd):
            a = outer.aff(3 + dim, spec.stride[dim]).plus(inner.aff(1 + dim, spec.dilation[dim]))
            a = Aff(a.terms, a.const - spec.padding[dim])
            conds += range_guard(a, in_sp[dim])
            src.append(a.expr())
        prod = Binary(
            "*",
            cast(x_at(n, iadd(imul(gi, cg), c), src), x.dtype, acc_dtype),
            cast(ctx.read(w, [kk, c, *taps]), w.dtype, acc_dtype),
        )
        tgt = out_at(n, kk, osp)
        first: Expr = (
            cast(ctx.read(bias, [kk]), bias.dtype, acc_dtype) if bias is not None else lit(0.0)
        )
        body: list[Stmt] = [Assign(tgt, first), *inner.wrap(guard(conds, [Reduce(tgt, "+", prod)]))]
        if acc is not None:
            body.append(Assign(ctx.write(out, [n, kk, *osp] if batched else [kk, *osp]), tgt))
        kb.emit(*outer.wrap(body))
        return

    # Transposed: init Y, then scatter X[n, c, i] * W[c, k, r] into Y[n, k, s*i + d*r - p].
    full = Nest(kb, [n_ext, kout, *out_sp], ["n", "k", *_SP[3 - nd :]])
    kb.emit(*init(full))
    outer = Nest(kb, [n_ext, g, cg, *in_sp], ["n", "g", "c", *_ISP[3 - nd :]])
    inner = Nest(kb, [kg, *ker], ["k", *_TAPS[:nd]])
    n, gi, ci, isp = outer.idx[0], outer.idx[1], outer.idx[2], outer.idx[3:]
    ki, taps = inner.idx[0], inner.idx[1:]
    cc = iadd(imul(gi, cg), ci)
    conds = []
    dst: list[Expr] = []
    for dim in range(nd):
        a = outer.aff(3 + dim, spec.stride[dim]).plus(inner.aff(1 + dim, spec.dilation[dim]))
        a = Aff(a.terms, a.const - spec.padding[dim])
        conds += range_guard(a, out_sp[dim])
        dst.append(a.expr())
    prod = Binary(
        "*",
        cast(x_at(n, cc, isp), x.dtype, acc_dtype),
        cast(ctx.read(w, [cc, ki, *taps]), w.dtype, acc_dtype),
    )
    tgt = out_at(n, iadd(imul(gi, kg), ki), dst)
    kb.emit(*outer.wrap(inner.wrap(guard(conds, [Reduce(tgt, "+", prod)]))))
    if acc is not None:
        fin = Nest(kb, list(out.shape), "i")
        kb.emit(*fin.wrap([Assign(ctx.write(out, fin.idx), acc[tuple(fin.idx)])]))


def _opt(x: object) -> TensorInfo | None:
    return x if isinstance(x, TensorInfo) else None


def _run(
    ctx: LowerCtx,
    call: OpCall,
    bias: object,
    stride: object,
    padding: object,
    dilation: object,
    transposed: object,
    groups: object,
) -> None:
    x, w = call.arg(0, "input"), call.arg(1, "weight")
    out = call.outputs[0]
    if not isinstance(x, TensorInfo) or not isinstance(w, TensorInfo) or out is None:
        raise UnsupportedOpError(f"{call.target}: tensor arguments expected")
    spec = _spec(w, stride, padding, dilation, bool(transposed), int(groups))  # type: ignore[call-overload]
    emit_conv(ctx, x, w, _opt(bias), out, spec)


@LOWERINGS.register(
    "aten.convolution.default",
    "aten._convolution.default",
    "aten._convolution.deprecated",
    "aten.convolution_overrideable.default",
)
def _convolution(ctx: LowerCtx, call: OpCall) -> None:
    """``convolution(input, weight, bias, stride, padding, dilation, transposed, _, groups)``."""
    a = call.arg
    _run(
        ctx,
        call,
        a(2, "bias"),
        a(3, "stride"),
        a(4, "padding"),
        a(5, "dilation"),
        a(6, "transposed"),
        a(8, "groups"),
    )


@LOWERINGS.register("aten.conv1d", "aten.conv2d", "aten.conv3d")
def _conv_nd(ctx: LowerCtx, call: OpCall) -> None:
    """``conv2d(input, weight, bias, stride, padding | "same" | "valid", dilation, groups)``."""
    a = call.arg
    _run(
        ctx,
        call,
        a(2, "bias"),
        a(3, "stride", 1),
        a(4, "padding", 0),
        a(5, "dilation", 1),
        False,
        a(6, "groups", 1),
    )


@LOWERINGS.register("aten.conv_transpose1d", "aten.conv_transpose2d", "aten.conv_transpose3d")
def _conv_transpose_nd(ctx: LowerCtx, call: OpCall) -> None:
    """``conv_transpose2d(input, weight, bias, stride, padding, out_padding, groups, dilation)``."""
    a = call.arg
    _run(
        ctx,
        call,
        a(2, "bias"),
        a(3, "stride", 1),
        a(4, "padding", 0),
        a(7, "dilation", 1),
        True,
        a(6, "groups", 1),
    )


@LOWERINGS.register("aten.mkldnn_convolution.default", "aten.miopen_convolution.default")
def _mkldnn_convolution(ctx: LowerCtx, call: OpCall) -> None:
    """``mkldnn_convolution(self, weight, bias, padding, stride, dilation, groups)``."""
    a = call.arg
    _run(
        ctx,
        call,
        a(2, "bias"),
        a(4, "stride"),
        a(3, "padding"),
        a(5, "dilation"),
        False,
        a(6, "groups"),
    )


@LOWERINGS.register("aten.cudnn_convolution.default")
def _cudnn_convolution(ctx: LowerCtx, call: OpCall) -> None:
    """``cudnn_convolution(self, weight, padding, stride, dilation, groups, ...)`` (no bias)."""
    a = call.arg
    _run(ctx, call, None, a(3, "stride"), a(2, "padding"), a(4, "dilation"), False, a(5, "groups"))


@LOWERINGS.register("aten.cudnn_convolution_transpose.default")
def _cudnn_convolution_transpose(ctx: LowerCtx, call: OpCall) -> None:
    """``cudnn_convolution_transpose(self, weight, padding, _, stride, dilation, groups, ...)``."""
    a = call.arg
    _run(ctx, call, None, a(4, "stride"), a(2, "padding"), a(5, "dilation"), True, a(6, "groups"))


@LOWERINGS.register(
    "aten._slow_conv2d_forward.default",
    "aten.slow_conv3d_forward.default",
    "aten.thnn_conv2d.default",
)
def _slow_conv(ctx: LowerCtx, call: OpCall) -> None:
    """``_slow_conv2d_forward(self, weight, kernel_size, bias, stride, padding)``."""
    a = call.arg
    _run(ctx, call, a(3, "bias"), a(4, "stride", 1), a(5, "padding", 0), 1, False, 1)


@LOWERINGS.register("aten.slow_conv_dilated2d.default", "aten.slow_conv_dilated3d.default")
def _slow_conv_dilated(ctx: LowerCtx, call: OpCall) -> None:
    """``slow_conv_dilated2d(self, weight, kernel_size, bias, stride, padding, dilation)``."""
    a = call.arg
    _run(
        ctx,
        call,
        a(3, "bias"),
        a(4, "stride", 1),
        a(5, "padding", 0),
        a(6, "dilation", 1),
        False,
        1,
    )


@LOWERINGS.register("aten._conv_depthwise2d.default", "aten.conv_depthwise3d.default")
def _conv_depthwise(ctx: LowerCtx, call: OpCall) -> None:
    """``_conv_depthwise2d(self, weight, kernel_size, bias, stride, padding, dilation)``."""
    a = call.arg
    x = a(0, "self")
    if not isinstance(x, TensorInfo):
        raise UnsupportedOpError("tensor input expected")
    nd = len(a(2, "kernel_size"))
    _run(
        ctx,
        call,
        a(3, "bias"),
        a(4, "stride"),
        a(5, "padding"),
        a(6, "dilation"),
        False,
        x.shape[x.rank - nd - 1],
    )


@LOWERINGS.register("aten.slow_conv_transpose2d.default", "aten.slow_conv_transpose3d.default")
def _slow_conv_transpose(ctx: LowerCtx, call: OpCall) -> None:
    """``slow_conv_transpose2d(self, weight, kernel_size, bias, stride, padding, output_padding,
    dilation)``."""
    a = call.arg
    _run(
        ctx, call, a(3, "bias"), a(4, "stride", 1), a(5, "padding", 0), a(7, "dilation", 1), True, 1
    )
