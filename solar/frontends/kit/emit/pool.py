"""The windowed-reduction emitter: ``reduce_window``, which every pooling op is built on.

Contract: a `Window` is the taps of one output element (its loops, the input position
and source index per windowed dim, and the guards that skip taps in the padding or in
the holes of base dilation: FLOPs count real taps only). `WindowSpec` is XLA's
``reduce_window`` geometry (window, strides, low padding, window and base dilation) over
the trailing windowed dims and makes those windows; PyTorch's adaptive pooling makes its
own (loop bounds with ``//``). `window_reduce` is the body every windowed reduction
shares, ``Y = init; for taps { if real { Y op= X[...] } }``, and `emit_reduce_window`
is the whole primitive (JAX's ``reduce_window_*``); PyTorch's max pooling adds its
indices and average pooling its divisor around `window_reduce`. Loop variables are
``i...`` for the leading dims and ``d/h/w`` for up to three windowed dims (``o`` each
for more), taps ``r/s/t`` (``w`` each for more). No torch, no jax.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from solar.frontends.kit.context import LowerCtx, Sink
from solar.frontends.kit.emit.operand import Operand
from solar.frontends.kit.emit.window import loop_names, window_source
from solar.frontends.kit.index import Aff, Nest, guard, nest
from solar.frontends.kit.values import TensorInfo
from solar.ir import Access, Assign, Expr, Name, Reduce, ReduceOp, Stmt

__all__ = [
    "Loop",
    "Window",
    "WindowFn",
    "WindowSpec",
    "emit_reduce_window",
    "pool_nest",
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
