"""Lowerings of padding and rearranging copies: constant/reflect/replicate/circular pads, flip,
rot90, roll, repeat, tril/triu, diag, pixel_shuffle/pixel_unshuffle, channel_shuffle.

Contract: one kernel per call whose loop nests partition the output into regions on
which the source index is affine (no ``select`` or data-dependent guards): a padded
dim splits into left border / interior / right border (`solar.frontends.kit.emit.pad`,
whose constant pad JAX's ``pad`` shares), a rolled dim into two shifted ranges, a
repeated dim into (copy, position) loop pairs. So every output element is
written exactly once and no element outside the source is ever read. The reflect and
replicate pads' backward (``*_pad{n}d_backward``) walks the same regions, adding each
gradient element at the source the forward read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

from solar.frontends.kit import (
    TensorInfo,
    UnsupportedOpError,
    cast,
    iadd_const_last,
    imul_const_last,
    nest,
)
from solar.frontends.kit.emit.pad import (
    PadMode,
    Segment,
    border_segments,
    emit_pad,
    emit_regions,
    identity,
    mirror,
    shift,
)
from solar.frontends.pytorch.lowering_utils import (
    binop,
    norm_dim,
    norm_dims,
    out0,
    scalar_lit,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Expr, If, Name, Reduce, Stmt

__all__: list[str] = []


def _pairs(pad: Sequence[int], rank: int) -> dict[int, tuple[int, int]]:
    """``F.pad`` order (last dim first) -> {dim: (before, after)}."""
    out = {}
    for k in range(len(pad) // 2):
        out[rank - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    return out


def _config(x: TensorInfo, pad: Sequence[int]) -> list[tuple[int, int, int]]:
    pads = _pairs(pad, x.rank)
    return [(*pads.get(d, (0, 0)), 0) for d in range(x.rank)]


@LOWERINGS.register("aten.constant_pad_nd")
def _constant_pad(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    fill = scalar_lit(call.arg(2, "value", 0), out.dtype)
    config = _config(x, call.arg(1, "pad"))
    emit_pad(ctx.kernel(), x.shape, config, x.at, x.dtype, out.at, out.dtype, fill=fill)


def _border_pad(mode: PadMode) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out = tensor_arg(call, 0, "self"), out0(call)
        config = _config(x, call.arg(1, "padding"))
        emit_pad(ctx.kernel(), x.shape, config, x.at, x.dtype, out.at, out.dtype, mode=mode)

    return lower


def _border_pad_backward(mode: PadMode) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        """``{reflection,replication}_pad{n}d_backward(grad, self, padding)``: zeros, then
        each output element's gradient added at the source the forward read (the same
        regions, so every gradient element is read once)."""
        g, out = tensor_arg(call, 0, "grad_output"), out0(call)
        segments = border_segments(mode, out.shape, _pairs(call.arg(2, "padding"), out.rank))
        kb = ctx.kernel()
        zero = ctx.vars(kb, out.rank)
        kb.emit(
            *nest(
                list(zip(zero, out.shape, strict=True)),
                [Assign(ctx.write(out, zero), scalar_lit(0, out.dtype))],
            )
        )
        for combo in itertools.product(*segments):
            if any(seg.hi <= seg.lo for seg in combo):
                continue
            idx = ctx.vars(kb, out.rank)
            src = [seg.source(v) for seg, v in zip(combo, idx, strict=True)]
            value = cast(ctx.read(g, idx), g.dtype, out.dtype)
            dims = [(v, seg.lo, seg.hi) for v, seg in zip(idx, combo, strict=True)]
            kb.emit(*nest(dims, [Reduce(ctx.write(out, src), "+", value)]))

    return lower


LOWERINGS.register("aten._pad_circular")(_border_pad("circular"))  # Note [Whole circular pad]
for _d in (1, 2, 3):
    LOWERINGS.register(f"aten.reflection_pad{_d}d")(_border_pad("reflect"))
    LOWERINGS.register(f"aten.replication_pad{_d}d")(_border_pad("replicate"))
    LOWERINGS.register(f"aten.reflection_pad{_d}d_backward")(_border_pad_backward("reflect"))
    LOWERINGS.register(f"aten.replication_pad{_d}d_backward")(_border_pad_backward("replicate"))


@LOWERINGS.register("aten.flip")
def _flip(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    dims = set(norm_dims(call.arg(1, "dims"), x.rank)) if call.arg(1, "dims") else set()
    segs = [
        [Segment(0, n, mirror(n - 1) if d in dims else identity)] for d, n in enumerate(x.shape)
    ]
    emit_regions(ctx.kernel(), x.at, x.dtype, out.at, out.dtype, segs, None)


@LOWERINGS.register("aten.rot90")
def _rot90(ctx: LowerCtx, call: OpCall) -> None:
    """``rot90(self, k, dims)``: a fresh tensor (eager flips, then transposes), so one
    copy kernel whose source index mirrors and swaps the two dims; ``k % 4 == 0`` is a
    plain copy."""
    x, out = tensor_arg(call, 0, "self"), out0(call)
    k = int(call.arg(1, "k", 1)) % 4
    d0, d1 = (norm_dim(d, x.rank) for d in call.arg(2, "dims", (0, 1)))
    n0, n1 = x.shape[d0], x.shape[d1]
    kb = ctx.kernel()
    idx = ctx.vars(kb, out.rank)
    src: list[Expr] = list(idx)
    if k == 1:  # out[.., a, .., b, ..] = x[.., b, .., n1 - 1 - a, ..]
        src[d0], src[d1] = idx[d1], mirror(n1 - 1)(idx[d0])
    elif k == 2:
        src[d0], src[d1] = mirror(n0 - 1)(idx[d0]), mirror(n1 - 1)(idx[d1])
    elif k == 3:  # out[.., a, .., b, ..] = x[.., n0 - 1 - b, .., a, ..]
        src[d0], src[d1] = mirror(n0 - 1)(idx[d1]), idx[d0]
    stmt = Assign(ctx.write(out, idx), cast(ctx.read(x, src), x.dtype, out.dtype))
    kb.emit(*nest(list(zip(idx, out.shape, strict=True)), [stmt]))


@LOWERINGS.register("aten.roll")
def _roll(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    shifts, dims = list(call.arg(1, "shifts")), list(call.arg(2, "dims", ()))
    if not dims:
        raise UnsupportedOpError("roll without dims (flattened roll)")
    amount = {norm_dim(d, x.rank): 0 for d in dims}
    for s, d in zip(shifts, dims, strict=True):
        amount[norm_dim(d, x.rank)] += s
    segs = []
    for d, n in enumerate(x.shape):
        s = amount.get(d, 0) % n if n else 0
        if s == 0:
            segs.append([Segment(0, n, identity)])
        else:
            segs.append([Segment(0, s, shift(n - s)), Segment(s, n, shift(-s))])
    emit_regions(ctx.kernel(), x.at, x.dtype, out.at, out.dtype, segs, None)


@LOWERINGS.register("aten.repeat")
def _repeat(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    reps = list(call.arg(1, "repeats"))
    shape = [1] * (len(reps) - x.rank) + list(x.shape)
    kb = ctx.kernel()
    rvars = ctx.vars(kb, len(reps), "r")
    jvars = ctx.vars(kb, len(reps), "j")
    oidx = [
        iadd_const_last(imul_const_last(r, n), j)
        for r, j, n in zip(rvars, jvars, shape, strict=True)
    ]
    src = list(jvars[len(reps) - x.rank :])
    stmt = Assign(ctx.write(out, oidx), cast(ctx.read(x, src), x.dtype, out.dtype))
    dims: list[tuple[Name, int]] = []
    for r, j, rep, n in zip(rvars, jvars, reps, shape, strict=True):
        dims += [(r, rep), (j, n)]
    kb.emit(*nest(dims, [stmt]))


def _tri(lower_tri: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out = tensor_arg(call, 0, "self"), out0(call)
        k = call.arg(1, "diagonal", 0)
        kb = ctx.kernel()
        idx = ctx.vars(kb, x.rank)
        i, j = idx[-2], idx[-1]
        edge = iadd_const_last(i, k)
        keep = binop("<=", j, edge) if lower_tri else binop(">=", j, edge)
        drop = binop(">", j, edge) if lower_tri else binop("<", j, edge)
        body: list[Stmt] = [
            If(keep, (Assign(ctx.write(out, idx), cast(ctx.read(x, idx), x.dtype, out.dtype)),)),
            If(drop, (Assign(ctx.write(out, idx), scalar_lit(0, out.dtype)),)),
        ]
        kb.emit(*nest(list(zip(idx, out.shape, strict=True)), body))

    return lower


LOWERINGS.register("aten.tril")(_tri(True))
LOWERINGS.register("aten.triu")(_tri(False))


@LOWERINGS.register("aten.diag_embed", "aten.diag")
def _diag(ctx: LowerCtx, call: OpCall) -> None:
    x, out = tensor_arg(call, 0, "self"), out0(call)
    if x.rank != 1 and "diag_embed" not in call.target:
        raise UnsupportedOpError("diag of a matrix lowers via diagonal")
    k = call.arg(1, "offset" if "embed" in call.target else "diagonal", 0)
    if "embed" in call.target and (call.arg(2, "dim1", -2), call.arg(3, "dim2", -1)) not in (
        (-2, -1),
        (out.rank - 2, out.rank - 1),
    ):
        raise UnsupportedOpError("diag_embed into non-trailing dims")
    kb = ctx.kernel()
    idx = ctx.vars(kb, out.rank)
    i, j = idx[-2], idx[-1]
    on = binop("==", j, iadd_const_last(i, k))
    src_pos = i if k >= 0 else iadd_const_last(i, k)
    body: list[Stmt] = [
        If(
            on,
            (
                Assign(
                    ctx.write(out, idx), cast(ctx.read(x, [*idx[:-2], src_pos]), x.dtype, out.dtype)
                ),
            ),
        ),
        If(
            binop("<", j, iadd_const_last(i, k)),
            (Assign(ctx.write(out, idx), scalar_lit(0, out.dtype)),),
        ),
        If(
            binop(">", j, iadd_const_last(i, k)),
            (Assign(ctx.write(out, idx), scalar_lit(0, out.dtype)),),
        ),
    ]
    kb.emit(*nest(list(zip(idx, out.shape, strict=True)), body))


def _shuffle(unshuffle: bool) -> Callable[[LowerCtx, OpCall], None]:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out = tensor_arg(call, 0, "self"), out0(call)
        r = call.arg(1, "downscale_factor" if unshuffle else "upscale_factor")
        small = out if unshuffle else x  # the [*, C*r*r, H, W] side
        lead = list(small.shape[:-3])
        c, h, w = small.shape[-3] // (r * r), small.shape[-2], small.shape[-1]
        kb = ctx.kernel()
        bvars = ctx.vars(kb, len(lead), "b")
        cv, hv, iv, wv, jv = ctx.vars(kb, 5, "s")
        packed = [
            *bvars,
            iadd_const_last(
                imul_const_last(cv, r * r), iadd_const_last(imul_const_last(iv, r), jv)
            ),
            hv,
            wv,
        ]
        spread = [
            *bvars,
            cv,
            iadd_const_last(imul_const_last(hv, r), iv),
            iadd_const_last(imul_const_last(wv, r), jv),
        ]
        dst, src = (packed, spread) if unshuffle else (spread, packed)
        stmt = Assign(ctx.write(out, dst), cast(ctx.read(x, src), x.dtype, out.dtype))
        dims = [*zip(bvars, lead, strict=True), (cv, c), (hv, h), (iv, r), (wv, w), (jv, r)]
        kb.emit(*nest(dims, [stmt]))

    return lower


LOWERINGS.register("aten.pixel_shuffle")(_shuffle(False))
LOWERINGS.register("aten.pixel_unshuffle")(_shuffle(True))


@LOWERINGS.register("aten.channel_shuffle", "aten.native_channel_shuffle")
def _channel_shuffle(ctx: LowerCtx, call: OpCall) -> None:
    """``channel_shuffle(self, groups)`` on ``[N, C, *]``: output channel ``i * groups + g``
    is input channel ``g * (C / groups) + i``."""
    x, out = tensor_arg(call, 0, "self"), out0(call)
    groups = int(call.arg(1, "groups"))
    if x.rank < 2 or groups <= 0 or x.shape[1] % groups:
        raise UnsupportedOpError("channel_shuffle needs [N, C, *] with C divisible by groups")
    per = x.shape[1] // groups
    kb = ctx.kernel()
    nv, iv, gv = ctx.vars(kb, 3, "c")
    rest = ctx.vars(kb, x.rank - 2, "s")
    dst = [nv, iadd_const_last(imul_const_last(iv, groups), gv), *rest]
    src = [nv, iadd_const_last(imul_const_last(gv, per), iv), *rest]
    stmt = Assign(ctx.write(out, dst), cast(ctx.read(x, src), x.dtype, out.dtype))
    dims = [(nv, x.shape[0]), (iv, per), (gv, groups), *zip(rest, x.shape[2:], strict=True)]
    kb.emit(*nest(dims, [stmt]))
