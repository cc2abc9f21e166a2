"""Lowering of ``_trilinear`` (what ``nn.Bilinear`` / ``F.bilinear`` dispatch to).

Contract: ``_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)``
unsqueezes each ``ik`` at the dims ``expandk`` (ascending) to a common rank, multiplies
the three (broadcasting size-1 dims) and sums over ``sumdim``, which leaves the result
(``unroll_dim`` only picks eager's loop order). ``F.bilinear(x1, x2, W)`` is
``_trilinear(x1, W, x2, [1, 3], [0], [1, 2], [2, 3])``: ``y[n, o] = sum_ij x1[n, i]
W[o, i, j] x2[n, j]``. The call is one kernel of pairwise contraction stages through
kernel-local buffers (Note [Trilinear contraction order]).

Note [Trilinear contraction order]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
One statement ``y += a * b * c`` over the whole index space counts 3 FLOPs per point,
``3 N O I J`` for a bilinear layer, while eager contracts in two pairwise steps
(``t[n, o, j] = sum_i x1 W``, then ``y = sum_j t x2``): ``2 N O I J + 2 N O J``. A bound
must not exceed what eager (or any better order) executes, so the lowering first sums
each summed dim that only one operand carries on its own, then evaluates every
contraction order (one three-way stage, or one of the three pairs first, summing each
dim no later operand needs) under the IR's FLOP rules (a ``+=`` product of ``m``
operands counts ``m`` FLOPs per point, a plain product ``m - 1``) and emits the
cheapest, never more than eager's order. For a bilinear layer that is ``2 N O I J``
plus the cheaper of the outer product ``x1 x2`` first (``N I J``) and a pair with ``W``
(``2 N O min(I, J)``, the smaller of ``I`` and ``J`` summed second).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from solar.frontends.kit import (
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    nest,
    zero,
)
from solar.frontends.pytorch.lowering_utils import norm_dim, out0, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Access, Assign, Binary, DType, Expr, IntLit, Name, Reduce, Stmt

__all__: list[str] = []

Reader = Callable[[Mapping[int, Expr]], Expr]
"""Value of an operand at the loop index of each (live) dim of the common rank."""


@dataclass(frozen=True, slots=True)
class _Operand:
    dims: frozenset[int]
    read: Reader


def _points(dims: frozenset[int], ext: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= ext[d]
    return n


def _stage_flops(
    group: Sequence[frozenset[int]], summed: frozenset[int], ext: Sequence[int]
) -> int:
    """FLOPs the IR counts for one product stage (Note [Trilinear contraction order])."""
    union = frozenset().union(*group)
    m = len(group)
    return _points(union, ext) * (m if summed else m - 1)


def _plans(
    dims: Sequence[frozenset[int]], sumdims: frozenset[int], ext: Sequence[int]
) -> list[tuple[int, tuple[tuple[int, ...], ...]]]:
    """(FLOPs, stages) of each contraction order; a stage is a tuple of operand slots
    (slot 3 is the first stage's result)."""
    plans: list[tuple[int, tuple[tuple[int, ...], ...]]] = [
        (_stage_flops(dims, sumdims & frozenset().union(*dims), ext), ((0, 1, 2),))
    ]
    for first in itertools.combinations(range(3), 2):
        (third,) = set(range(3)) - set(first)
        pair = [dims[k] for k in first]
        union = frozenset().union(*pair)
        s1 = (sumdims & union) - dims[third]
        mid = union - s1
        cost = _stage_flops(pair, s1, ext)
        cost += _stage_flops([mid, dims[third]], sumdims & (mid | dims[third]), ext)
        plans.append((cost, (first, (3, third))))
    return plans


def _expanded(t: TensorInfo, expand: Sequence[int], total: int) -> list[int | None]:
    """For each dim of the common rank, the dim of ``t`` sitting there (``None``: added)."""
    added = {norm_dim(d, total) for d in expand}
    if t.rank + len(added) != total:
        raise UnsupportedOpError("_trilinear expand lists disagree with the ranks")
    src = iter(range(t.rank))
    return [None if d in added else next(src) for d in range(total)]


@LOWERINGS.register("aten._trilinear")
def _trilinear(ctx: LowerCtx, call: OpCall) -> None:
    ins = [tensor_arg(call, k, f"i{k + 1}") for k in range(3)]
    out = out0(call)
    total = ins[0].rank + len(call.arg(3, "expand1"))
    maps = [_expanded(t, call.arg(3 + k, f"expand{k + 1}"), total) for k, t in enumerate(ins)]
    ext = [
        max(
            (t.shape[k] for t, m in zip(ins, maps, strict=True) if (k := m[d]) is not None),
            default=1,
        )
        for d in range(total)
    ]
    if 0 in ext:
        raise UnsupportedOpError("_trilinear of an empty operand")
    sumdims = frozenset(norm_dim(d, total) for d in call.arg(6, "sumdim"))
    out_dims = [d for d in range(total) if d not in sumdims]
    if tuple(ext[d] for d in out_dims) != out.shape:
        raise UnsupportedOpError("_trilinear output shape disagrees with its arguments")
    dt = accumulate_dtype(out.dtype)
    kb = ctx.kernel()

    def reader(t: TensorInfo, m: Sequence[int | None]) -> Reader:
        def read(idx: Mapping[int, Expr]) -> Expr:
            pos = [
                (IntLit(0) if t.shape[k] == 1 else idx[d]) for d, k in enumerate(m) if k is not None
            ]
            return cast(ctx.read(t, pos), t.dtype, dt)

        return read

    live = [
        frozenset(d for d, k in enumerate(m) if k is not None and t.shape[k] > 1)
        for t, m in zip(ins, maps, strict=True)
    ]
    ops: list[_Operand] = []
    for j, (t, m) in enumerate(zip(ins, maps, strict=True)):
        op = _Operand(live[j], reader(t, m))
        # A summed dim that no other operand carries is summed before any product.
        own = (live[j] & sumdims) - frozenset().union(*(live[:j] + live[j + 1 :]))
        ops.append(_stage(ctx, kb, [op], own, ext, dt) if own else op)
    _, stages = min(_plans([o.dims for o in ops], sumdims, ext), key=lambda p: p[0])
    slots = dict(enumerate(ops))
    for k, stage in enumerate(stages):
        group = [slots[s] for s in stage]
        union = frozenset().union(*(o.dims for o in group))
        rest = frozenset().union(*(o.dims for s, o in slots.items() if s not in stage))
        summed = (sumdims & union) - (rest if k + 1 < len(stages) else frozenset())
        if k + 1 < len(stages):
            slots = {s: o for s, o in slots.items() if s not in stage}
            slots[3] = _stage(ctx, kb, group, summed, ext, dt)
        else:
            _final(ctx, kb, group, summed, ext, dt, out, out_dims)


def _product(group: Sequence[_Operand], idx: Mapping[int, Expr]) -> Expr:
    value = group[0].read(idx)
    for o in group[1:]:
        value = Binary("*", value, o.read(idx))
    return value


def _stage(
    ctx: LowerCtx,
    kb: Sink,
    group: Sequence[_Operand],
    summed: frozenset[int],
    ext: Sequence[int],
    dt: DType,
) -> _Operand:
    """``t = sum_summed prod(group)`` into a kernel-local buffer over the kept dims."""
    union = frozenset().union(*(o.dims for o in group))
    kept = sorted(union - summed)
    buf = kb.local(dt, [ext[d] for d in kept], "t")
    _emit(ctx, kb, group, summed, ext, dt, lambda idx: buf[tuple(idx[d] for d in kept)], kept)

    def read(idx: Mapping[int, Expr]) -> Expr:
        return buf[tuple(idx[d] for d in kept)] if kept else buf.scalar()

    return _Operand(frozenset(kept), read)


def _final(
    ctx: LowerCtx,
    kb: Sink,
    group: Sequence[_Operand],
    summed: frozenset[int],
    ext: Sequence[int],
    dt: DType,
    out: TensorInfo,
    out_dims: Sequence[int],
) -> None:
    """The last stage, into ``out`` (through an f32 buffer for 16/8-bit outputs)."""
    kept = [d for d in out_dims if ext[d] > 1]

    def target(idx: Mapping[int, Expr]) -> list[Expr]:
        return [idx[d] if ext[d] > 1 else IntLit(0) for d in out_dims]

    if dt == out.dtype:
        _emit(ctx, kb, group, summed, ext, dt, lambda idx: ctx.write(out, target(idx)), kept)
        return
    acc = _stage(ctx, kb, group, summed, ext, dt)
    idx = {d: v for d, v in zip(kept, ctx.vars(kb, len(kept)), strict=True)}
    stmt = Assign(ctx.write(out, target(idx)), cast(acc.read(idx), dt, out.dtype))
    kb.emit(*nest([(v, ext[d]) for d, v in idx.items()], [stmt]))


def _emit(
    ctx: LowerCtx,
    kb: Sink,
    group: Sequence[_Operand],
    summed: frozenset[int],
    ext: Sequence[int],
    dt: DType,
    target: Callable[[Mapping[int, Expr]], Access],
    kept: Sequence[int],
) -> None:
    """``target = sum_summed prod(group)`` (``=`` when nothing is summed)."""
    summed_live = sorted(d for d in summed if ext[d] > 1)
    idx: dict[int, Name] = dict(zip(kept, ctx.vars(kb, len(kept)), strict=True))
    red: dict[int, Name] = dict(zip(summed_live, ctx.vars(kb, len(summed_live), "k"), strict=True))
    full = {**idx, **red}
    dst = target(full)
    loops = [(v, ext[d]) for d, v in idx.items()]
    rloops = [(v, ext[d]) for d, v in red.items()]
    if summed_live:
        body: list[Stmt] = [
            Assign(dst, zero(dt)),
            *nest(rloops, [Reduce(dst, "+", _product(group, full))]),
        ]
    else:
        body = [Assign(dst, _product(group, full))]
    kb.emit(*nest(loops, body))
