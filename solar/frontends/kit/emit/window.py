"""Window positions, the geometry convolutions and windowed reductions share.

Contract: pure helpers over `Aff` indices. A window tap of output position ``o`` and tap
``r`` in one dim reads the (base-dilated, padded) input at ``stride * o + dilation * r -
pad``; `window_source` turns that position into the guard conditions (taps in the
padding or, with base dilation, in its holes are skipped, so FLOPs count real taps only)
and the source index. No torch, no jax.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.frontends.kit.index import Aff, range_guard
from solar.ir import Binary, Expr, IntLit, lit

__all__ = ["loop_names", "window_source"]


def window_source(pos: Aff, extent: int, base_dilation: int = 1) -> tuple[list[Expr], Expr]:
    """``(guards, source index)`` of window position ``pos`` in an input dim of
    ``extent``, dilated by ``base_dilation`` (``//`` and a ``%`` guard when above 1).

    >>> from solar.ir import Name, print_expr
    >>> conds, src = window_source(Aff.of((2, Name("o"), 4), (1, Name("r"), 3), const=-1), 8)
    >>> [print_expr(c) for c in conds], print_expr(src)
    (['0 <= 2 * o + r - 1'], '2 * o + r - 1')
    """
    dilated = (extent - 1) * base_dilation + 1 if extent else 0
    conds = range_guard(pos, dilated)
    if base_dilation == 1:
        return conds, pos.expr()
    conds.append(Binary("==", Binary("%", pos.expr(), lit(base_dilation)), IntLit(0)))
    return conds, Binary("//", pos.expr(), lit(base_dilation))


def loop_names(base: Sequence[str], nd: int, other: str, *, last: bool = True) -> list[str]:
    """``nd`` loop-variable hints: the last (or first) ``nd`` of ``base``, else ``other``
    for each when ``base`` is too short.

    >>> loop_names(("od", "oh", "ow"), 2, "o"), loop_names(("r", "s", "t"), 1, "w", last=False)
    (['oh', 'ow'], ['r'])
    """
    if nd > len(base):
        return [other] * nd
    return list(base[len(base) - nd :] if last else base[:nd])
