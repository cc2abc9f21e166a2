"""Lowerings of the ATen matmul family: adapters to the kit's `emit_dot_general`.

Contract: ``(LowerCtx, OpCall) -> None``; each call is one ``dot_general`` kernel
(`solar.frontends.kit.emit.contraction`): ``mm``/``bmm``/``mv``/``dot`` are plain
dimension numbers, ``addmm``/``baddbmm``/``addmv``/``addbmm`` add an epilogue (``beta * C``
initialises the accumulator when both scales are 1; otherwise ``alpha``/``beta`` apply
in a final statement). ``matmul``, ``linear`` and ``einsum`` decompose at dispatch into
``view``/``expand``/``permute``/``t`` (ops_movement.py) and these ops. ``addr`` (an outer
product, no contraction) is one elementwise kernel.
"""

from __future__ import annotations

from solar.frontends.kit import TensorInfo, UnsupportedOpError, accumulate_dtype, cast
from solar.frontends.kit.emit import DotDims, Epilogue, emit_dot_general
from solar.frontends.pytorch.lowering_utils import (
    binop,
    elementwise,
    operand,
    out0,
    scalar_lit,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, LoweringFn, OpCall
from solar.ir import Expr, Name

__all__: list[str] = []

_MM = DotDims((1,), (0,))
_BMM = DotDims((2,), (1,), (0,), (0,))


def _epilogue(call: OpCall, out: TensorInfo) -> Epilogue:
    """``beta * C + alpha * (A @ B)``: ``C`` is argument 0, the scales arguments 3 and 4."""
    c, dt = call.args[0], accumulate_dtype(out.dtype)
    return Epilogue(
        bias=lambda o: operand(c, o, out.shape, dt),
        alpha=call.arg(4, "alpha", 1),
        beta=call.arg(3, "beta", 1),
    )


def _dot(names: tuple[str, str], dims: DotDims, *, add: bool) -> LoweringFn:
    """The lowering of a matmul-like op: tensor arguments ``names`` (after ``C`` for the
    ``add*`` ops, which get the `Epilogue`)."""

    def lower(ctx: LowerCtx, call: OpCall) -> None:
        first = 1 if add else 0
        a, b = tensor_arg(call, first, names[0]), tensor_arg(call, first + 1, names[1])
        out = out0(call)
        emit_dot_general(ctx, out, a, b, dims, _epilogue(call, out) if add else None)

    return lower


_ADDBMM = DotDims((0, 2), (0, 1))  # the batch dim is contracted too: sum over b and k
for _ops, _names, _dims, _add in (
    (("aten.mm", "aten._int_mm"), ("self", "mat2"), _MM, False),  # _int_mm: reads widen
    (("aten.addmm",), ("mat1", "mat2"), _MM, True),
    (("aten.bmm",), ("self", "mat2"), _BMM, False),
    (("aten.baddbmm",), ("batch1", "batch2"), _BMM, True),
    (("aten.addbmm",), ("batch1", "batch2"), _ADDBMM, True),
    (("aten.mv",), ("self", "vec"), _MM, False),
    (("aten.addmv",), ("mat", "vec"), _MM, True),
):
    LOWERINGS.register(*_ops)(_dot(_names, _dims, add=_add))


@LOWERINGS.register("aten.dot", "aten.vdot", "aten.inner")
def _vdot(ctx: LowerCtx, call: OpCall) -> None:
    a, b = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "tensor")
    if a.rank != 1 or b.rank != 1:
        raise UnsupportedOpError(f"{call.target}: expected vectors")
    emit_dot_general(ctx, out0(call), a, b, DotDims((0,), (0,)))


@LOWERINGS.register("aten.addr")
def _addr(ctx: LowerCtx, call: OpCall) -> None:
    c = call.args[0]
    v1, v2, out = tensor_arg(call, 1, "vec1"), tensor_arg(call, 2, "vec2"), out0(call)
    beta, alpha = call.arg(3, "beta", 1), call.arg(4, "alpha", 1)
    dt = out.dtype

    def value(idx: tuple[Name, ...]) -> Expr:
        prod = binop(
            "*",
            cast(LowerCtx.read(v1, [idx[0]]), v1.dtype, dt),
            cast(LowerCtx.read(v2, [idx[1]]), v2.dtype, dt),
        )
        if alpha != 1:
            prod = binop("*", prod, scalar_lit(alpha, dt))
        if beta == 0:
            return prod
        term = operand(c, idx, out.shape, dt)
        return binop("+", term if beta == 1 else binop("*", term, scalar_lit(beta, dt)), prod)

    elementwise(ctx, out, value)
