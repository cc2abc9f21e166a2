"""The windowed-reduction emitter: ``reduce_window``, which every pooling op is built on.

Contract: a `Window` is the taps of one output element (its loops, the input position
and source index per windowed dim, and the guards that skip taps in the padding or in
the holes of base dilation: FLOPs count real taps only). `WindowSpec` is XLA's
``reduce_window`` geometry (window, strides, low padding, window and base dilation) over
the trailing windowed dims and makes those windows; PyTorch's adaptive pooling makes its
own (loop bounds with ``//``). `window_reduce` is the body every windowed reduction
shares, ``Y = init; for taps { if real { Y op= X[...] } }``, and `emit_reduce_window`
is the whole primitive (JAX's ``reduce_window_*``); PyTorch's max pooling adds its
indices and average pooling its divisor around `window_reduce`. `emit_select_scatter` is
the gradient of max/min pooling (XLA's ``select_and_scatter_add``, PyTorch's
``max_pool*_with_indices_backward``): zeros, then each source element added at its
window's selected tap, which a `Selector` finds: `select_by_compare` walks the window
(XLA), `select_by_index` decodes the forward's flat indices (PyTorch). Loop variables are
``i...`` for the leading dims and ``d/h/w`` for up to three windowed dims (``o`` each
for more), taps ``r/s/t`` (``w`` each for more). No torch, no jax.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from solar.frontends.kit.context import LowerCtx, Sink
from solar.frontends.kit.dtypes import cast, zero
from solar.frontends.kit.emit.operand import Operand
from solar.frontends.kit.emit.window import loop_names, window_source
from solar.frontends.kit.index import Aff, Nest, const_int, guard, nest, range_guard
from solar.frontends.kit.table import UnsupportedOpError
from solar.frontends.kit.values import TensorInfo
from solar.ir import (
    Access,
    Assign,
    Binary,
    DType,
    Expr,
    For,
    If,
    IntLit,
    Name,
    Reduce,
    ReduceOp,
    Stmt,
    lit,
)

__all__ = [
    "Loop",
    "Selector",
    "Window",
    "WindowFn",
    "WindowSpec",
    "emit_reduce_window",
    "emit_select_scatter",
    "pool_nest",
    "select_by_compare",
    "select_by_index",
    "window_reduce",
]

Loop = tuple[Name, int] | tuple[Name, Expr, Expr]
"""A tap loop: ``(var, extent)`` or ``(var, lo, hi)``."""

_SP = ("d", "h", "w")
_TAPS = ("r", "s", "t")


@dataclass(frozen=True, slots=True)
class Window:
    """The taps of one window.

    Attributes:
        loops: the tap loops.
        pos: the input position of each windowed dim (before base dilation).
        src: the source index of each windowed dim.
        conds: the guards of real taps.
    """

    loops: list[Loop]
    pos: list[Aff]
    src: list[Expr]
    conds: list[Expr]


WindowFn = Callable[[Sink, Nest], Window]
"""Builds a window (with fresh tap variables) for the output indices of a `Nest`."""


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """``reduce_window``'s geometry over the trailing ``len(window)`` dims.

    Attributes:
        window: window extents.
        strides: window strides.
        padding: low padding (the high side follows from the output extent).
        window_dilation / base_dilation: ``()`` for none.
    """

    window: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[int, ...]
    window_dilation: tuple[int, ...] = ()
    base_dilation: tuple[int, ...] = ()

    def windows(self, in_sp: Sequence[int]) -> WindowFn:
        """The windows over an input whose windowed dims have extents ``in_sp``."""
        nd = len(self.window)
        wdil = self.window_dilation or (1,) * nd
        bdil = self.base_dilation or (1,) * nd

        def windows(kb: Sink, outer: Nest) -> Window:
            taps = Nest(kb, self.window, loop_names(_TAPS, nd, "w", last=False))
            lead = len(outer.extents) - nd
            pos: list[Aff] = []
            src: list[Expr] = []
            conds: list[Expr] = []
            for d in range(nd):
                a = outer.aff(lead + d, self.strides[d]).plus(taps.aff(d, wdil[d]))
                a = a.plus(-self.padding[d])
                cs, e = window_source(a, in_sp[d], bdil[d])
                conds += cs
                pos.append(a)
                src.append(e)
            return Window(list(taps.dims), pos, src, conds)

        return windows


def pool_nest(kb: Sink, shape: Sequence[int], nd: int) -> Nest:
    """The output nest: ``i`` for the leading dims, ``d/h/w`` for the ``nd`` windowed."""
    return Nest(kb, shape, ["i"] * (len(shape) - nd) + loop_names(_SP, nd, "o"))


def window_reduce(
    x: Operand,
    outer: Nest,
    win: Window,
    tgt: Access,
    op: ReduceOp,
    init: Expr,
    value: Callable[[Expr], Expr] | None = None,
) -> list[Stmt]:
    """``tgt = init; for taps { if real { tgt op= value(x[lead..., src]) } }``."""
    lead = len(outer.extents) - len(win.src)
    read = x.at([*outer.idx[:lead], *win.src])
    red = Reduce(tgt, op, value(read) if value is not None else read)
    return [Assign(tgt, init), *nest(win.loops, guard(win.conds, [red]))]


def emit_reduce_window(
    ctx: LowerCtx,
    x: Operand,
    out: TensorInfo,
    spec: WindowSpec,
    op: ReduceOp,
    init: Expr,
    *,
    hint: str | None = None,
) -> None:
    """Emit ``out = reduce_window(x, init, op, spec)`` as one kernel."""
    nd = len(spec.window)
    kb = ctx.kernel(hint)
    outer = pool_nest(kb, out.shape, nd)
    win = spec.windows(x.shape[len(x.shape) - nd :])(kb, outer)
    kb.emit(*outer.wrap(window_reduce(x, outer, win, ctx.write(out, outer.idx), op, init)))


Selector = Callable[[Sink, Nest], tuple[list[Stmt], list[Expr]]]
"""Per source element (the `Nest` over the source): the statements that find its
window's selected tap, and the output index the element is added at."""


def emit_select_scatter(
    ctx: LowerCtx,
    source: Operand,
    out: TensorInfo,
    select: Selector,
    *,
    names: tuple[str, str] = ("i", "i"),
    hint: str | None = None,
) -> None:
    """Emit ``out = 0``, then ``out[select(s)] += source[s]`` for every source element
    ``s``, as one kernel (``names``: the loop-variable hints of the two nests).

    One FLOP per source element, plus what the selector charges.
    """
    kb = ctx.kernel(hint)
    full = Nest(kb, out.shape, names[0])
    if full.empty:
        return
    kb.emit(*full.wrap([Assign(ctx.write(out, full.idx), zero(out.dtype))]))
    outer = Nest(kb, source.shape, names[1])
    if outer.empty:
        return
    stmts, dst = select(kb, outer)
    value = cast(source.at(outer.idx), source.dtype, out.dtype)
    kb.emit(*outer.wrap([*stmts, Reduce(ctx.write(out, dst), "+", value)]))


def select_by_index(indices: Operand, plane: Sequence[int]) -> Selector:
    """PyTorch's selection: the forward's ``indices`` (one per source element, flat over
    the trailing ``len(plane)`` dims of the output) decoded into the plane's indices by
    ``//`` and ``%``: index arithmetic, no FLOPs."""
    nd = len(plane)

    def select(_kb: Sink, outer: Nest) -> tuple[list[Stmt], list[Expr]]:
        flat = indices.at(outer.idx)
        dst: list[Expr] = []
        inner = 1
        for d in reversed(range(nd)):
            pos: Expr = flat if inner == 1 else Binary("//", flat, IntLit(inner))
            if d > 0:
                pos = Binary("%", pos, IntLit(plane[d]))
            dst.insert(0, pos)
            inner *= plane[d]
        return [], [*outer.idx[: len(outer.extents) - nd], *dst]

    return select


def select_by_compare(
    x: Operand, source_shape: Sequence[int], spec: WindowSpec, cmp: Literal[">", "<"]
) -> Selector:
    """XLA's selection over windows of every dim of ``x`` (``spec``: no dilation; one
    window per element of ``source_shape``): a
    ``seq`` walk over the in-bounds taps keeps the running extreme and its tap number
    (``if x > m { m = x; a = tap }``: one compare per tap, the value-guarded updates
    count 0); the first extreme wins, as XLA's ``ge``/``le`` select.

    Raises:
        UnsupportedOpError: dilation, or a window entirely in the padding.
    """
    win, strides, pads = spec.window, spec.strides, spec.padding
    nd = len(win)
    if any(v != 1 for v in (*spec.window_dilation, *spec.base_dilation)):
        raise UnsupportedOpError("select_and_scatter_add with dilation")
    for d in range(nd):
        for o in range(source_shape[d]):
            if not any(0 <= o * strides[d] + w - pads[d] < x.shape[d] for w in range(win[d])):
                raise UnsupportedOpError("select_and_scatter_add with a window entirely in padding")

    def select(kb: Sink, outer: Nest) -> tuple[list[Stmt], list[Expr]]:
        m = kb.local(x.dtype, outer.extents, "m")[tuple(outer.idx)]
        a = kb.local(DType.I64, outer.extents, "a")[tuple(outer.idx)]
        place = [math.prod(win[d + 1 :]) for d in range(nd)]
        taps = Nest(kb, win, "w")
        conds: list[Expr] = []
        where: list[Expr] = []
        linear: Expr | None = None
        for d in range(nd):
            pos = outer.aff(d, strides[d]).plus(taps.aff(d)).plus(-pads[d])
            conds += range_guard(pos, x.shape[d])
            where.append(pos.expr())
            if win[d] > 1:
                term = taps.idx[d] if place[d] == 1 else Binary("*", lit(place[d]), taps.idx[d])
                linear = term if linear is None else Binary("+", linear, term)
        value = x.at(where)
        update = If(Binary(cmp, value, m), (Assign(m, value), Assign(a, linear or IntLit(0))))
        walk = [_seq_all(s) for s in taps.wrap(guard(conds, [update]))]
        dst: list[Expr] = []
        for d in range(nd):
            start = outer.aff(d, strides[d]).plus(-pads[d]).expr()
            if win[d] == 1:
                dst.append(start)
                continue
            tap: Expr = a if place[d] == 1 else Binary("//", a, lit(place[d]))
            if any(w > 1 for w in win[:d]):
                tap = Binary("%", tap, lit(win[d]))
            dst.append(tap if const_int(start) == 0 else Binary("+", start, tap))
        init = lit(-math.inf) if cmp == ">" else lit(math.inf)
        return [Assign(m, init), Assign(a, lit(math.prod(win) - 1)), *walk], dst

    return select


def _seq_all(s: Stmt) -> Stmt:
    """``s`` with every ``for`` in it made sequential (a running extreme is ordered)."""
    if isinstance(s, For):
        return dataclasses.replace(s, seq=True, body=tuple(_seq_all(b) for b in s.body))
    if isinstance(s, If):
        return dataclasses.replace(s, body=tuple(_seq_all(b) for b in s.body))
    return s
