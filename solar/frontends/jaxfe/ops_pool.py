"""Lowering of ``reduce_window``: an adapter to the kit's `emit_reduce_window`.

Contract: ``EqnCtx -> None``; ``reduce_window_sum/max/min`` and ``reduce_window`` with a
single-op body (add, max, min, mul) are one kernel (`solar.frontends.kit.emit.pool`):
``out = init; out op= x[window]`` with guards that skip padded taps and base-dilation
holes, so FLOPs count real taps, as the PyTorch frontend's pooling does.
"""

from __future__ import annotations

from solar.frontends.jaxfe.core import EqnOperand, Lit
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import TensorInfo, UnsupportedOpError, reduce_identity
from solar.frontends.kit.emit import WindowSpec, emit_reduce_window
from solar.ir import Expr, ReduceOp

__all__: list[str] = []

_WINDOW_OPS: dict[str, ReduceOp] = {
    "reduce_window_sum": "+",
    "reduce_window_max": "max",
    "reduce_window_min": "min",
}
_BODY_OPS: dict[str, ReduceOp] = {"add": "+", "max": "max", "min": "min", "mul": "*"}


@LOWERINGS.register(*_WINDOW_OPS, "reduce_window")
def _reduce_window(ctx: EqnCtx) -> None:
    x: EqnOperand
    if ctx.prim == "reduce_window":
        op, x, init = _generic_window(ctx)
    else:
        op, x = _WINDOW_OPS[ctx.prim], ctx.ins[0]
        init = reduce_identity(op, ctx.out_dtype(0))
    p = ctx.params
    spec = WindowSpec(
        window=tuple(int(v) for v in p["window_dimensions"]),
        strides=tuple(int(v) for v in p["window_strides"]),
        padding=tuple(int(lo) for lo, _ in p["padding"]),
        window_dilation=tuple(int(v) for v in (p.get("window_dilation") or ())),
        base_dilation=tuple(int(v) for v in (p.get("base_dilation") or ())),
    )
    emit_reduce_window(ctx, x, ctx.out(0), spec, op, init)


def _generic_window(ctx: EqnCtx) -> tuple[ReduceOp, TensorInfo, Expr]:
    """The op, operand and init of a ``reduce_window`` whose body is one binary op."""
    body = ctx.params["jaxpr"]
    jaxpr = getattr(body, "jaxpr", body)
    if len(ctx.ins) != 2 or len(jaxpr.eqns) != 1:
        raise UnsupportedOpError("reduce_window with a variadic or multi-op body")
    op = _BODY_OPS.get(jaxpr.eqns[0].primitive.name)
    x, init = ctx.ins
    if op is None or not isinstance(x, TensorInfo) or not isinstance(init, Lit):
        raise UnsupportedOpError("reduce_window body is not a single add/max/min/mul")
    return op, x, init.expr()
