"""Lowerings of the spatial and indexing backward ops (docs/training.md).

Contract: as ops_backward.py (one kernel per call, eager's formulas):
``convolution_backward`` (input gradient = the transposed convolution of the output
gradient through `ops_conv.conv`, weight gradient = the correlation of the output gradient
with the input through the kit's `emit_conv_weight_grad`, bias gradient = a sum; one
launch for all three),
``max_pool{2,3}d_with_indices_backward`` (the kit's `emit_select_scatter`),
``avg_pool{1,2,3}d_backward`` and ``_adaptive_avg_pool{2,3}d_backward`` (the
forward's windows and divisors, `ops_pool`), ``embedding_dense_backward``,
``select_backward``, ``slice_backward`` and ``diagonal_backward`` (zeros, then the
gradient into the part), ``unfold_backward`` (zeros, then each window added back).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from solar.frontends.kit import (
    Aff,
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    expand_param,
    guard,
    nest,
)
from solar.frontends.kit.emit import (
    WindowFn,
    WindowSpec,
    emit_conv_weight_grad,
    emit_select_scatter,
    select_by_index,
)
from solar.frontends.pytorch.lowering_utils import binop, norm_dim, out0, tensor_arg
from solar.frontends.pytorch.ops_backward import OneKernel
from solar.frontends.pytorch.ops_conv import ConvArgs, conv
from solar.frontends.pytorch.ops_pool import (
    DivisorFn,
    adaptive_divisors,
    adaptive_windows,
    avg_divisors,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Binary, DType, Expr, If, IntLit, Reduce, Stmt, lit

__all__: list[str] = []


@LOWERINGS.register("aten.convolution_backward.default")
def _convolution_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``convolution_backward(grad, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask) -> (dx, dw, db)``: the input gradient
    is the transposed convolution of ``grad`` (`ops_conv.conv`), the weight gradient the
    correlation of ``grad`` with the input, the bias gradient a sum; one kernel each."""
    g, x, w = (
        tensor_arg(call, 0, "grad_output"),
        tensor_arg(call, 1, "input"),
        tensor_arg(call, 2, "weight"),
    )
    transposed = bool(call.arg(7, "transposed"))
    nd = w.rank - 2
    if x.rank != nd + 2:
        raise UnsupportedOpError("unbatched convolution backward")
    groups = int(call.arg(9, "groups"))
    fwd = ConvArgs(
        stride=expand_param(call.arg(4, "stride"), nd, "stride"),
        padding=expand_param(call.arg(5, "padding"), nd, "padding"),
        dilation=expand_param(call.arg(6, "dilation"), nd, "dilation"),
        transposed=not transposed,
        groups=groups,
    )
    dx, dw, db = [*call.outputs, None, None, None][:3]
    ctx = OneKernel(ctx)
    if dx is not None:  # the adjoint: a transposed conv of the gradient, or a conv for one
        conv(ctx, g, w, None, dx, fwd)
    if dw is not None:  # a convolution's: dense dY, windowed X; a transposed one's swapped
        dense, windowed = (x, g) if transposed else (g, x)
        emit_conv_weight_grad(
            ctx, dense, windowed, dw, strides=fwd.stride, padding=fwd.padding,
            dilation=fwd.dilation, groups=groups, hint="conv_backward_weight",
        )  # fmt: skip
    if db is not None:
        kb = ctx.kernel("conv_backward_bias")
        ch, red = Nest(kb, [g.shape[1]], "k"), Nest(kb, [g.shape[0], *g.shape[2:]], "i")
        dt = accumulate_dtype(db.dtype)
        acc = kb.local(dt, [g.shape[1]], "acc")[ch.idx[0]]
        kb.emit(
            *ch.wrap(
                [
                    Assign(acc, lit(0.0)),
                    *red.wrap(
                        [
                            Reduce(
                                acc,
                                "+",
                                cast(
                                    ctx.read(g, [red.idx[0], ch.idx[0], *red.idx[1:]]), g.dtype, dt
                                ),
                            )
                        ]
                    ),
                    Assign(ctx.write(db, ch.idx), cast(acc, dt, db.dtype)),
                ]
            )
        )


@LOWERINGS.register("aten.embedding_dense_backward.default")
def _embedding_dense_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)``:
    zeros, then ``dW[idx[i], d] += G[i, d]`` (rows at ``padding_idx`` skipped); with
    ``scale_grad_by_freq`` each term is divided by its row's count in the batch, counted
    first into a kernel-local (as eager counts before it scatters)."""
    g, ids, out = tensor_arg(call, 0, "grad_output"), tensor_arg(call, 1, "indices"), out0(call)
    pad = int(call.arg(3, "padding_idx", -1))
    kb = ctx.kernel()
    init = Nest(kb, out.shape, "i")
    kb.emit(*init.wrap([Assign(ctx.write(out, init.idx), lit(0.0))]))
    counts = None
    if bool(call.arg(4, "scale_grad_by_freq", False)):
        counts = kb.local(DType.I64, [out.shape[0]], "count")
        zero = Nest(kb, [out.shape[0]], "w")
        seen = Nest(kb, ids.shape, "i")
        kb.emit(
            *zero.wrap([Assign(counts[zero.idx[0]], IntLit(0))]),
            *seen.wrap([Reduce(counts[ctx.read(ids, seen.idx)], "+", IntLit(1))]),
        )
    rows = Nest(kb, ids.shape, "i")
    cols = Nest(kb, [out.shape[1]], "d")
    row = ctx.read(ids, rows.idx)
    value: Expr = cast(ctx.read(g, [*rows.idx, cols.idx[0]]), g.dtype, out.dtype)
    if counts is not None:
        value = binop("/", value, cast(counts[row], DType.I64, out.dtype))
    stmt: Stmt = Reduce(ctx.write(out, [row, cols.idx[0]]), "+", value)
    if pad >= 0:
        stmt = If(binop("!=", row, lit(pad)), (stmt,))
    kb.emit(*rows.wrap(cols.wrap([stmt])))


def _zero_then(ctx: LowerCtx, out: TensorInfo) -> tuple[Sink, Nest]:
    """A kernel starting with ``out = 0`` (as eager's ``zeros`` + copy)."""
    kb = ctx.kernel()
    init = Nest(kb, out.shape, "i")
    kb.emit(*init.wrap([Assign(ctx.write(out, init.idx), lit(0.0))]))
    return kb, init


@LOWERINGS.register("aten.select_backward.default", "aten.slice_backward.default")
def _select_slice_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``select_backward(grad, input_sizes, dim, index)`` / ``slice_backward(grad,
    input_sizes, dim, start, end, step)``: zeros, then ``grad`` into the selected part."""
    g, out = tensor_arg(call, 0, "grad_output"), out0(call)
    dim = norm_dim(call.arg(2, "dim"), out.rank)
    kb, _ = _zero_then(ctx, out)
    part = Nest(kb, g.shape, "j")
    src = list(part.idx)
    if call.op == "select_backward":
        index = int(call.arg(3, "index"))
        dst = [*src[:dim], IntLit(index % out.shape[dim]), *src[dim:]]
    else:
        start, step = int(call.arg(3, "start") or 0), int(call.arg(5, "step", 1))
        start = min(max(start + out.shape[dim] if start < 0 else start, 0), out.shape[dim])
        dst = list(src)
        dst[dim] = part.aff(dim, step).plus(Aff((), start)).expr()
    kb.emit(*part.wrap([Assign(ctx.write(out, dst), cast(ctx.read(g, src), g.dtype, out.dtype))]))


@LOWERINGS.register("aten.diagonal_backward.default")
def _diagonal_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``diagonal_backward(grad, input_sizes, offset, dim1, dim2)``: zeros, then ``grad``
    (the other dims in order, the diagonal last) onto the diagonal."""
    g, out = tensor_arg(call, 0, "grad_output"), out0(call)
    offset = int(call.arg(2, "offset", 0))
    d1, d2 = norm_dim(call.arg(3, "dim1"), out.rank), norm_dim(call.arg(4, "dim2"), out.rank)
    if d1 == d2:
        raise UnsupportedOpError("diagonal_backward with dim1 == dim2")
    kb, _ = _zero_then(ctx, out)
    part = Nest(kb, g.shape, "j")
    rest = list(part.idx[:-1])
    first = part.aff(g.rank - 1).plus(max(-offset, 0))
    second = part.aff(g.rank - 1).plus(max(offset, 0))
    dst: list[Expr] = []
    for d in range(out.rank):
        if d == d1:
            dst.append(first.expr())
        elif d == d2:
            dst.append(second.expr())
        else:
            dst.append(rest.pop(0))
    kb.emit(
        *part.wrap([Assign(ctx.write(out, dst), cast(ctx.read(g, part.idx), g.dtype, out.dtype))])
    )


@LOWERINGS.register("aten.unfold_backward.default")
def _unfold_backward(ctx: LowerCtx, call: OpCall) -> None:
    """``unfold_backward(grad, input_sizes, dim, size, step)``: zeros, then each window's
    gradient added back, ``dX[.., w step + k, ..] += G[.., w, .., k]``."""
    g, out = tensor_arg(call, 0, "grad_in"), out0(call)
    dim = norm_dim(call.arg(2, "dim"), out.rank) if out.rank else 0
    step = int(call.arg(4, "step"))
    kb, _ = _zero_then(ctx, out)
    part = Nest(kb, g.shape, "j")
    dst: list[Expr] = list(part.idx[: out.rank])
    if out.rank:
        dst[dim] = part.aff(dim, step).plus(part.aff(g.rank - 1)).expr()
    else:
        dst = []
    value = cast(ctx.read(g, part.idx), g.dtype, out.dtype)
    kb.emit(*part.wrap([Reduce(ctx.write(out, dst), "+", value)]))


def _emit_avg_backward(
    ctx: LowerCtx,
    g: TensorInfo,
    out: TensorInfo,
    nd: int,
    windows: WindowFn,
    divisor: DivisorFn,
) -> None:
    """Zeros, then each output's gradient, divided once by its window's divisor (the
    forward's, `ops_pool`), added to every input of its window."""
    dt = accumulate_dtype(out.dtype)
    kb, _ = _zero_then(ctx, out)
    lead = g.rank - nd
    scaled = kb.local(dt, g.shape, "scaled")
    outer = Nest(kb, g.shape, ["i"] * lead + ["oh", "ow", "od"][:nd])
    win = windows(kb, outer)
    const, den = 1, None
    for v in divisor(outer):
        if isinstance(v, int):
            const *= v
        else:
            den = v if den is None else Binary("*", den, v)
    if den is None:
        den = lit(float(const))
    elif const != 1:
        den = Binary("*", lit(const), den)
    sg = scaled[tuple(outer.idx)]
    dst = [*outer.idx[:lead], *win.src]
    kb.emit(
        *outer.wrap(
            [
                Assign(sg, binop("/", cast(ctx.read(g, outer.idx), g.dtype, dt), den)),
                *nest(
                    win.loops,
                    guard(win.conds, [Reduce(ctx.write(out, dst), "+", cast(sg, dt, out.dtype))]),
                ),
            ]
        )
    )


def _avg_pool_backward(nd: int) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``avg_pool{nd}d_backward(grad, self, kernel, stride, padding, ceil_mode,
        count_include_pad, divisor_override)``: the forward's windows and divisors
        (``ceil_mode`` and excluded padding give windows of varying size)."""
        g, out = tensor_arg(call, 0, "grad_output"), out0(call)
        kernel = expand_param(call.arg(2, "kernel_size"), nd, "kernel_size")
        stride = expand_param(call.arg(3, "stride") or kernel, nd, "stride")
        padding = expand_param(call.arg(4, "padding"), nd, "padding")
        include_pad = bool(call.arg(6, "count_include_pad"))
        override = call.arg(7, "divisor_override")
        in_sp = out.shape[out.rank - nd :]
        windows = WindowSpec(kernel, stride, padding).windows(in_sp)
        divisor = avg_divisors(
            kernel, stride, padding, in_sp, include_pad=include_pad, override=override
        )
        _emit_avg_backward(ctx, g, out, nd, windows, divisor)

    return lower


for _nd in (1, 2, 3):
    LOWERINGS.register(f"aten.avg_pool{_nd}d_backward.default")(_avg_pool_backward(_nd))


def _max_pool_backward(nd: int, indices_pos: int = 7) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``max_pool{nd}d_with_indices_backward(grad, self, kernel, stride, padding,
        dilation, ceil_mode, indices)`` and ``adaptive_max_pool{nd}d_backward(grad, self,
        indices)``: zeros, then each output's gradient added at its argmax (``indices``
        are flat over the pooled plane): the kit's `emit_select_scatter`, as JAX's
        ``select_and_scatter_add``, with the forward's indices as the selection."""
        g, out = tensor_arg(call, 0, "grad_output"), out0(call)
        idx = tensor_arg(call, indices_pos, "indices")
        emit_select_scatter(ctx, g, out, select_by_index(idx, out.shape[out.rank - nd :]))

    return lower


for _nd in (2, 3):
    LOWERINGS.register(f"aten.max_pool{_nd}d_with_indices_backward.default")(
        _max_pool_backward(_nd)
    )
    LOWERINGS.register(f"aten.adaptive_max_pool{_nd}d_backward.default")(
        _max_pool_backward(_nd, indices_pos=2)
    )


def _adaptive_avg_backward(nd: int) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``_adaptive_avg_pool{nd}d_backward(grad, self)``: ``g[o // k] / prod(k)`` per
        input when every window has one size (input extents multiples of the output's),
        else the forward's windows (`ops_pool`) scattered as for ``avg_pool``."""
        g, out = tensor_arg(call, 0, "grad_output"), out0(call)
        lead = out.rank - nd
        in_sp, out_sp = out.shape[lead:], g.shape[lead:]
        if any(i % o for i, o in zip(in_sp, out_sp, strict=True)):
            windows = adaptive_windows(nd, in_sp, out_sp)
            _emit_avg_backward(ctx, g, out, nd, windows, adaptive_divisors(in_sp, out_sp))
            return
        ks = [i // o for i, o in zip(in_sp, out_sp, strict=True)]
        dt = accumulate_dtype(out.dtype)
        kb = ctx.kernel()
        full = Nest(kb, out.shape, "i")
        src = [
            *full.idx[:lead],
            *(
                full.idx[lead + d]
                if ks[d] == 1
                else Binary("//", full.idx[lead + d], IntLit(ks[d]))
                for d in range(nd)
            ),
        ]
        val: Expr = cast(ctx.read(g, src), g.dtype, dt)
        if math.prod(ks) != 1:
            val = binop("/", val, lit(float(math.prod(ks))))
        kb.emit(*full.wrap([Assign(ctx.write(out, full.idx), cast(val, dt, out.dtype))]))

    return lower


for _nd in (2, 3):
    LOWERINGS.register(f"aten._adaptive_avg_pool{_nd}d_backward.default")(
        _adaptive_avg_backward(_nd)
    )
