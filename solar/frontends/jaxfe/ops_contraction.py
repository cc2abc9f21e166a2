"""Lowering of ``dot_general``: an adapter to the kit's `emit_dot_general`.

Contract: ``EqnCtx -> None``; one kernel (`solar.frontends.kit.emit.contraction`), the
IR the PyTorch frontend emits for ``mm``/``bmm`` (2 FLOPs per multiply-add; a plain
product, 1 FLOP, without contracting dims).
"""

from __future__ import annotations

from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit.emit import DotDims, emit_dot_general

__all__: list[str] = []


@LOWERINGS.register("dot_general")
def _dot_general(ctx: EqnCtx) -> None:
    (lc, rc), (lb, rb) = ctx.params["dimension_numbers"]
    dims = DotDims(*(tuple(int(v) for v in t) for t in (lc, rc, lb, rb)))
    a, b = ctx.ins
    emit_dot_general(ctx, ctx.out(0), a, b, dims)
