"""Lowerings of shape primitives: free views, and data-moving copies (one kernel each).

Contract: ``reshape``, ``squeeze``, ``expand_dims``, ``broadcast_in_dim``, ``tile``,
``transpose``, ``slice``, ``split`` and ``unstack`` return views (Note [Free views] in
`solar.frontends.jaxfe.core`); ``pad`` is `solar.frontends.kit.emit.pad`'s constant pad
(negative and interior padding included; one loop nest per output region); ``rev``,
``concatenate``, ``stack``, ``iota``, ``dynamic_slice`` and ``dynamic_update_slice`` emit
one kernel that writes every output element once.
Literal inputs (``jnp.zeros`` is a broadcast literal) stay literals through views and
copies, so constant fills cost nothing. ``dynamic_update_slice`` updates its operand in
place when XLA can (the operand is an intermediate that is dead afterwards), so only
the update window is charged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.jaxfe.core import EqnOperand, Lit, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import (
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    broadcast_map,
    iadd,
    imul,
    reshape_map,
)
from solar.frontends.kit.emit.pad import emit_pad
from solar.ir import Access, Assign, Binary, Call, Cast, DType, Expr, IntLit, lit

__all__ = ["clamped_starts", "write"]


def write(t: TensorInfo, idx: Sequence[Expr | int]) -> Access:
    """The access storing into ``t`` at ``idx``."""
    return Access(t.ref.name, t.storage_index(idx))


@LOWERINGS.register("reshape")
def _reshape(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    x = ctx.ins[0]
    shape = ctx.out_shape(0)
    if isinstance(x, Lit):
        return (x.reshaped(shape),)
    dims = ctx.params.get("dimensions")
    in_shape = x.shape
    if dims is not None and tuple(dims) != tuple(range(len(in_shape))):
        # A transpose then a reshape (autodiff of grouped convolutions emits it): the
        # transpose moves data, as the ``transpose`` kernel does.
        perm = tuple(int(d) for d in dims)
        moved = tuple(in_shape[d] for d in perm)

        def source(idx: list[Expr]) -> Expr:
            t_idx = reshape_map(moved, shape, idx)
            src: list[Expr] = [IntLit(0)] * len(perm)
            for k, d in enumerate(perm):
                src[d] = t_idx[k]
            return read(x, src)

        return _copy_kernel(ctx, source)
    return (x.view(shape, lambda idx: tuple(reshape_map(in_shape, shape, idx))),)


@LOWERINGS.register("squeeze")
def _squeeze(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    x = ctx.ins[0]
    shape = ctx.out_shape(0)
    if isinstance(x, Lit):
        return (x.reshaped(shape),)
    dims = {d % max(x.rank, 1) for d in ctx.params["dimensions"]}
    rank = x.rank

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        it = iter(idx)
        return tuple(IntLit(0) if k in dims else next(it) for k in range(rank))

    return (x.view(shape, index_map),)


@LOWERINGS.register("expand_dims")
def _expand_dims(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    x = ctx.ins[0]
    shape = ctx.out_shape(0)
    if isinstance(x, Lit):
        return (x.reshaped(shape),)
    new = {d % len(shape) for d in ctx.params["dimensions"]}
    return (x.view(shape, lambda idx: tuple(e for k, e in enumerate(idx) if k not in new)),)


@LOWERINGS.register("broadcast_in_dim")
def _broadcast_in_dim(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    x = ctx.ins[0]
    shape = ctx.out_shape(0)
    if isinstance(x, Lit):
        return (x.reshaped(shape),)
    src = broadcast_map(x.shape, shape, tuple(ctx.params["broadcast_dimensions"]))
    return (x.view(shape, lambda idx: tuple(idx[s[0]] if s else IntLit(0) for s in src)),)


def _copy_kernel(
    ctx: EqnCtx, source: Callable[[list[Expr]], Expr]
) -> tuple[EqnOperand, ...] | None:
    """``out[idx] = source(idx)`` over the output; literals pass through unchanged."""
    x = ctx.ins[0]
    if isinstance(x, Lit):
        return (x.reshaped(ctx.out_shape(0)),)
    out = ctx.out(0)
    kb = ctx.kernel()
    nest = Nest(kb, ctx.out_shape(0))
    if not nest.empty:
        kb.emit(*nest.wrap([Assign(write(out, nest.idx), source(nest.idx))]))
    return None


@LOWERINGS.register("transpose")
def _transpose(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    """A free view permuting the indices (Note [Free views]: PyTorch's ``permute``)."""
    perm = tuple(int(p) for p in ctx.params["permutation"])
    x = ctx.ins[0]
    shape = ctx.out_shape(0)
    if isinstance(x, Lit):
        return (x.reshaped(shape),)

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        src: list[Expr] = [IntLit(0)] * len(perm)
        for k, p in enumerate(perm):
            src[p] = idx[k]
        return tuple(src)

    return (x.view(shape, index_map),)


@LOWERINGS.register("rev")
def _rev(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    dims = set(ctx.params["dimensions"])
    x = ctx.ins[0]
    shape = ctx.out_shape(0)

    def source(idx: list[Expr]) -> Expr:
        return read(
            x, [Binary("-", lit(shape[k] - 1), e) if k in dims else e for k, e in enumerate(idx)]
        )

    return _copy_kernel(ctx, source)


@LOWERINGS.register("slice")
def _slice(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    """A free strided view (Note [Free views]: PyTorch's basic slicing)."""
    starts = tuple(int(s) for s in ctx.params["start_indices"])
    strides = tuple(int(s) for s in ctx.params["strides"] or (1,) * len(starts))
    x = ctx.ins[0]
    shape = ctx.out_shape(0)
    if isinstance(x, Lit):
        return (x.reshaped(shape),)

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(iadd(imul(st, e), s) for e, s, st in zip(idx, starts, strides, strict=True))

    return (x.view(shape, index_map),)


@LOWERINGS.register("pad")
def _pad(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    x, value = ctx.ins[0], ctx.ins[1]
    config = [(int(lo), int(hi), int(it)) for lo, hi, it in ctx.params["padding_config"]]
    if isinstance(x, Lit) and isinstance(value, Lit) and x.value == value.value:
        return (x.reshaped(ctx.out_shape(0)),)
    out = ctx.out(0)
    if any(e == 0 for e in ctx.out_shape(0)):
        return None
    reader = lambda idx: read(x, idx)  # noqa: E731
    fill = read(value, [])
    emit_pad(ctx.kernel(), x.shape, config, reader, x.dtype, out.at, out.dtype, fill=fill)
    return None


@LOWERINGS.register("concatenate")
def _concatenate(ctx: EqnCtx) -> None:
    dim = int(ctx.params["dimension"])
    out = ctx.out(0)
    kb = ctx.kernel()
    offset = 0
    for x in ctx.ins:
        nest = Nest(kb, x.shape)
        if not nest.empty:
            dst = list(nest.idx)
            dst[dim] = iadd(dst[dim], offset)
            kb.emit(*nest.wrap([Assign(write(out, dst), read(x, nest.idx))]))
        offset += x.shape[dim]


@LOWERINGS.register("stack")
def _stack(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    axis = int(ctx.params["axis"])
    shape = ctx.out_shape(0)
    lits = [x for x in ctx.ins if isinstance(x, Lit)]
    if len(lits) == len(ctx.ins) and len({x.value for x in lits}) == 1:
        return (lits[0].reshaped(shape),)
    out = ctx.out(0)
    kb = ctx.kernel()
    for k, x in enumerate(ctx.ins):
        nest = Nest(kb, x.shape)
        if nest.empty:
            continue
        dst = [*nest.idx[:axis], lit(k), *nest.idx[axis:]]
        kb.emit(*nest.wrap([Assign(write(out, dst), read(x, nest.idx))]))
    return None


@LOWERINGS.register("split")
def _split(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    """Free views of consecutive pieces along ``axis`` (PyTorch's ``split``)."""
    axis = int(ctx.params["axis"])
    x = ctx.ins[0]
    outs: list[EqnOperand] = []
    offset = 0
    for k in range(len(ctx.eqn.outvars)):
        shape = ctx.out_shape(k)
        if isinstance(x, Lit):
            outs.append(x.reshaped(shape))
        else:
            outs.append(x.view(shape, _offset_map(axis, offset)))
        offset += shape[axis]
    return tuple(outs)


def _offset_map(axis: int, offset: int) -> Callable[[tuple[Expr, ...]], tuple[Expr, ...]]:
    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        src = list(idx)
        src[axis] = iadd(src[axis], offset)
        return tuple(src)

    return index_map


@LOWERINGS.register("tile")
def _tile(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    """``jnp.tile``: a free view ``out[i...] = x[i % d...]`` (XLA lowers it to a broadcast
    and a reshape, which are free views here too)."""
    x = ctx.ins[0]
    shape = ctx.out_shape(0)
    if isinstance(x, Lit):
        return (x.reshaped(shape),)
    in_shape = x.shape
    off = len(shape) - len(in_shape)
    if off < 0:
        raise UnsupportedOpError(f"tile of rank {len(in_shape)} to rank {len(shape)}")

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        src: list[Expr] = []
        for k, d in enumerate(in_shape):
            e = idx[off + k]
            if d == 1:
                src.append(IntLit(0))
            elif d == shape[off + k]:
                src.append(e)
            else:
                src.append(Binary("%", e, lit(d)))
        return tuple(src)

    return (x.view(shape, index_map),)


@LOWERINGS.register("unstack")
def _unstack(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    """``jnp.unstack``: free views of each slice along ``axis`` (PyTorch's ``unbind``)."""
    axis = int(ctx.params["axis"])
    x = ctx.ins[0]
    outs: list[EqnOperand] = []
    for k in range(len(ctx.eqn.outvars)):
        shape = ctx.out_shape(k)
        if isinstance(x, Lit):
            outs.append(x.reshaped(shape))
        else:
            outs.append(x.view(shape, _unstack_map(axis, k)))
    return tuple(outs)


def _unstack_map(axis: int, k: int) -> Callable[[tuple[Expr, ...]], tuple[Expr, ...]]:
    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return (*idx[:axis], lit(k), *idx[axis:])

    return index_map


_UNSIGNED_IOTA = {"uint32": DType.I32, "uint64": DType.I64}
"""Unsigned iotas (``jnp.einsum``'s diagonal masks) hold small values: stored as the signed
type of the same width (same bytes, same values); consumers whose result is unsigned
stay uncovered."""


@LOWERINGS.register("iota")
def _iota(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    dim = int(ctx.params["dimension"])
    shape = ctx.out_shape(0)
    unsigned = _UNSIGNED_IOTA.get(ctx.out_avals[0][1])
    if unsigned is not None:
        dtype = unsigned
        out = ctx.lowerer.alloc(ctx.eqn.outvars[0], shape, dtype, ctx.prim)
    else:
        dtype = ctx.out_dtype(0)
        out = ctx.out(0)
    kb = ctx.kernel()
    nest = Nest(kb, shape)
    if nest.empty:
        return (out,)
    value: Expr = nest.idx[dim]
    if dtype != DType.I64:
        value = Cast(dtype, value)
    kb.emit(*nest.wrap([Assign(write(out, nest.idx), value)]))
    return (out,)


def clamped_starts(
    kb: Sink, starts: Sequence[EqnOperand], dims: Sequence[int], sizes: Sequence[int]
) -> list[Expr]:
    """Start indices clamped to ``[0, dim - size]`` as XLA does.

    Literal starts fold; a tensor start is clamped once into a rank-0 kernel local
    (2 FLOPs), which the subscripts then read.
    """
    out: list[Expr] = []
    for s, d, z in zip(starts, dims, sizes, strict=True):
        if isinstance(s, Lit):
            out.append(lit(min(max(int(s.value), 0), d - z)))
            continue
        if d - z == 0:
            out.append(IntLit(0))
            continue
        loc = kb.local(DType.I64, (), "start")
        acc = loc.scalar()
        value = Call("min", (Call("max", (Cast(DType.I64, read(s, [])), IntLit(0))), lit(d - z)))
        kb.emit(Assign(acc, value))
        out.append(acc)
    return out


@LOWERINGS.register("dynamic_slice")
def _dynamic_slice(ctx: EqnCtx) -> None:
    x = ctx.ins[0]
    sizes = tuple(int(s) for s in ctx.params["slice_sizes"])
    out = ctx.out(0)
    kb = ctx.kernel()
    starts = clamped_starts(kb, ctx.ins[1:], x.shape, sizes)
    nest = Nest(kb, sizes)
    if nest.empty:
        return
    src = [iadd(e, s) for s, e in zip(starts, nest.idx, strict=True)]
    kb.emit(*nest.wrap([Assign(write(out, nest.idx), read(x, src))]))


@LOWERINGS.register("dynamic_update_slice")
def _dynamic_update_slice(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    x, upd = ctx.ins[0], ctx.ins[1]
    out_shape = ctx.out_shape(0)
    inplace = ctx.lowerer.reusable(x)
    if not inplace and (donated := ctx.lowerer.take_donated(x)) is not None:
        x, inplace = donated, True
    out = x if inplace else ctx.out(0)
    assert isinstance(out, TensorInfo)
    kb = ctx.kernel()
    if not inplace:
        full = Nest(kb, out_shape)
        if not full.empty:
            kb.emit(*full.wrap([Assign(write(out, full.idx), read(x, full.idx))]))
    starts = clamped_starts(kb, ctx.ins[2:], out_shape, upd.shape)
    nest = Nest(kb, upd.shape)
    if not nest.empty:
        dst = [iadd(e, s) for s, e in zip(starts, nest.idx, strict=True)]
        kb.emit(*nest.wrap([Assign(write(out, dst), read(upd, nest.idx))]))
    return (out,) if inplace else None
