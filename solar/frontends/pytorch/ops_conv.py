"""Lowerings of ATen convolutions (1-3D, grouped, dilated, transposed): adapters to the
kit's `emit_conv`.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel
(`solar.frontends.kit.emit.conv`). A forward conv is the gather form ``Y[n, k, o] =
bias[k]; Y[n, k, o] += X[n, g*Cg + c, s*o + d*r - p] * W[k, c, r]``; a transposed conv
is a convolution of the stride-dilated input with the reversed kernel, lowered in
scatter form ``Y[n, k, s*i + d*r - p] += X[n, c, i] * W[c, k, r]`` (its weight is
``[C, K/g, *R]``: the group offset is on its first dim). Padding modes other than zeros
arrive as a separate pad op (``reflection_pad2d``...) before ``convolution``.

CPU dispatch (torch 2.13): ``F.conv*d``/``F.conv_transpose*d``/``nn.Conv*d`` all reach
``aten.convolution.default``; the backend ops below it (``mkldnn_convolution``,
``_slow_conv2d_forward``, cuDNN...) are registered too for captures that see them.
"""

from __future__ import annotations

from dataclasses import dataclass

from solar.frontends.kit import TensorInfo, UnsupportedOpError, as_int, expand_param
from solar.frontends.kit.emit import ConvSpec, emit_conv
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall

__all__ = ["ConvArgs", "conv"]


@dataclass(frozen=True, slots=True)
class ConvArgs:
    """PyTorch's convolution parameters, normalised (per spatial dim)."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool
    groups: int

    def spec(self, w: TensorInfo, batched: bool) -> ConvSpec:
        """The kit's spec: a transposed conv is a conv of the ``stride``-dilated input
        with the reversed kernel, padded ``d * (K - 1) - p`` low."""
        nd = len(self.stride)
        std = tuple(range(nd + 2))
        flat: tuple[int | None, ...] = std if batched else (None, *range(nd + 1))
        if not self.transposed:
            return ConvSpec(
                strides=self.stride,
                padding=self.padding,
                lhs_dilation=(1,) * nd,
                rhs_dilation=self.dilation,
                feature_groups=self.groups,
                lhs_layout=flat,
                out_layout=flat,
            )
        ker = w.shape[2:]
        return ConvSpec(
            strides=(1,) * nd,
            padding=tuple(
                d * (k - 1) - p for d, k, p in zip(self.dilation, ker, self.padding, strict=True)
            ),
            lhs_dilation=self.stride,
            rhs_dilation=self.dilation,
            feature_groups=self.groups,
            lhs_layout=flat,
            rhs_layout=(1, 0, *range(2, nd + 2)),
            out_layout=flat,
            rhs_reversed=True,
            rhs_groups_on="in",
        )


def _args(
    weight: TensorInfo,
    stride: object,
    padding: object,
    dilation: object,
    transposed: bool,
    groups: int,
) -> ConvArgs:
    nd = weight.rank - 2
    if nd < 1:
        raise UnsupportedOpError("convolution weight must have rank >= 3")
    if isinstance(padding, str):
        if padding == "valid":
            pad: tuple[int, ...] = (0,) * nd
        elif padding == "same":
            dil = expand_param(dilation, nd, "dilation", 1)
            # torch pads total = d * (k - 1), the smaller half first.
            pad = tuple(d * (k - 1) // 2 for d, k in zip(dil, weight.shape[2:], strict=True))
        else:
            raise UnsupportedOpError(f"unknown padding mode {padding!r}")
    else:
        pad = expand_param(padding, nd, "padding", 0)
    return ConvArgs(
        stride=expand_param(stride, nd, "stride", 1),
        padding=pad,
        dilation=expand_param(dilation, nd, "dilation", 1),
        transposed=bool(transposed),
        groups=int(groups),
    )


def conv(
    ctx: LowerCtx,
    x: TensorInfo,
    w: TensorInfo,
    bias: TensorInfo | None,
    out: TensorInfo,
    args: ConvArgs,
) -> None:
    """Emit one convolution kernel (forward or transposed): ``x`` ``[N, C, *S]`` (or
    unbatched ``[C, *S]``), ``w`` ``[K, C/g, *R]`` (transposed: ``[C, K/g, *R]``),
    ``bias`` ``[K]``, ``out`` ``[N, K, *O]``.

    Raises:
        UnsupportedOpError: inconsistent shapes.
    """
    nd = w.rank - 2
    if x.rank not in (nd + 1, nd + 2) or len(args.stride) != nd:
        raise UnsupportedOpError(f"conv input rank {x.rank} does not match weight rank {w.rank}")
    emit_conv(ctx, x, w, out, args.spec(w, x.rank == nd + 2), bias=bias)


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
    args = _args(w, stride, padding, dilation, bool(transposed), as_int(groups, "groups"))
    conv(ctx, x, w, _opt(bias), out, args)


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
