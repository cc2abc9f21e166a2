"""Helpers shared by the ATen lowerings: dims, broadcasting, casts, loop nests.

Contract: pure helpers over `TensorInfo`/`OpCall` and IR nodes; no torch. Every
helper that emits code goes through `LowerCtx`, so kernel naming and view maps
stay in one place (registry.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from solar.frontends.kit import Sink, TensorInfo, UnsupportedOpError, cast, nest
from solar.frontends.pytorch.registry import LowerCtx, OpCall
from solar.ir import (
    Assign,
    Binary,
    Call,
    DType,
    Expr,
    IntLit,
    Name,
    Stmt,
    lit,
)

__all__ = [
    "ElementwiseArg",
    "bcast_index",
    "bcast_read",
    "binop",
    "copy_kernel",
    "elementwise",
    "fn",
    "norm_dim",
    "norm_dims",
    "operand",
    "out0",
    "promote",
    "same_value",
    "scalar_lit",
    "sel",
    "tensor_arg",
]

ElementwiseArg = TensorInfo | int | float | bool
"""An elementwise operand: a tensor or a Python scalar."""

_FLOAT_RANK = {
    DType.F8E4M3: 0,
    DType.F8E5M2: 0,
    DType.BF16: 1,
    DType.F16: 1,
    DType.F32: 2,
    DType.F64: 3,
}
_INT_RANK = {DType.BOOL: 0, DType.I8: 1, DType.I32: 2, DType.I64: 3}


def norm_dim(dim: int, rank: int) -> int:
    """Normalise a possibly negative dim (rank-0 tensors accept 0 and -1).

    >>> norm_dim(-1, 3)
    2
    """
    r = max(rank, 1)
    if not -r <= dim < r:
        raise UnsupportedOpError(f"dim {dim} out of range for rank {rank}")
    return dim + r if dim < 0 else dim


def norm_dims(dims: int | Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Normalised sorted dims; ``None`` or ``[]`` means every dim.

    >>> norm_dims([-1, 0], 3)
    (0, 2)
    """
    if dims is None:
        return tuple(range(rank))
    if isinstance(dims, int):
        dims = (dims,)
    if len(dims) == 0:
        return tuple(range(rank))
    if rank == 0:
        return ()
    return tuple(sorted({norm_dim(d, rank) for d in dims}))


def out0(call: OpCall) -> TensorInfo:
    """The first declared output of a call."""
    out = call.outputs[0]
    if out is None:
        raise UnsupportedOpError(f"{call.target}: no tensor output declared")
    return out


def promote(*operands: Any) -> DType:
    """Result dtype of an elementwise op following torch's rules, approximately.

    Tensors decide the category (bool < int < float); scalars only raise the
    category (a float scalar with int tensors gives f32), never the width.
    """
    tensors = [x.dtype for x in operands if isinstance(x, TensorInfo)]
    floats = [d for d in tensors if d.is_float]
    if floats:
        return max(floats, key=lambda d: _FLOAT_RANK[d])
    if any(isinstance(x, float) for x in operands):
        return DType.F32
    ints = [d for d in tensors if d != DType.BOOL]
    if ints:
        return max(ints, key=lambda d: _INT_RANK[d])
    if any(isinstance(x, int) and not isinstance(x, bool) for x in operands):
        return DType.I64
    return DType.BOOL


def scalar_lit(value: Any, dtype: DType | None = None) -> Expr:
    """A literal for a Python scalar of ``dtype``: ints become floats for a floating
    ``dtype``, numbers become ``true``/``false`` for ``bool`` and floats are truncated for
    an integer ``dtype`` (as storing into such a tensor does)."""
    if dtype == DType.BOOL and isinstance(value, int | float):
        return lit(bool(value))
    if (
        dtype is not None
        and not dtype.is_float
        and isinstance(value, float)
        and math.isfinite(value)
    ):
        return lit(int(value))
    if isinstance(value, bool):
        if dtype is not None and dtype.is_float:
            return lit(1.0 if value else 0.0)
        return lit(value)
    if isinstance(value, int):
        return lit(float(value)) if dtype is not None and dtype.is_float else lit(value)
    if isinstance(value, float):
        return lit(value)
    raise UnsupportedOpError(f"unsupported scalar argument {value!r}")


def bcast_index(shape: Sequence[int], out_shape: Sequence[int], idx: Sequence[Expr]) -> list[Expr]:
    """Indices into a tensor of ``shape`` broadcast (right-aligned) to ``out_shape``."""
    off = len(out_shape) - len(shape)
    if off < 0:
        raise UnsupportedOpError(f"cannot broadcast {tuple(shape)} to {tuple(out_shape)}")
    return [
        IntLit(0) if d == 1 and out_shape[off + k] != 1 else idx[off + k]
        for k, d in enumerate(shape)
    ]


def bcast_read(t: TensorInfo, idx: Sequence[Expr], out_shape: Sequence[int]) -> Expr:
    """Read ``t`` at ``idx`` of the broadcast shape ``out_shape``."""
    return LowerCtx.read(t, bcast_index(t.shape, out_shape, idx))


def operand(
    x: ElementwiseArg, idx: Sequence[Expr], out_shape: Sequence[int], dtype: DType | None = None
) -> Expr:
    """The value of an elementwise operand at ``idx``, cast to ``dtype`` if given."""
    if isinstance(x, TensorInfo):
        expr = bcast_read(x, idx, out_shape)
        return cast(expr, x.dtype, dtype) if dtype is not None else expr
    return scalar_lit(x, dtype)


def elementwise(
    ctx: LowerCtx,
    out: TensorInfo,
    fn: Callable[[tuple[Name, ...]], Expr],
    *,
    hint: str | None = None,
    extra_outputs: Sequence[tuple[TensorInfo, Callable[[tuple[Name, ...]], Expr]]] = (),
) -> Sink:
    """Emit one kernel ``out[idx] = fn(idx)`` over the output's shape.

    ``extra_outputs`` adds further assignments in the same loop nest (ops with two
    results such as ``log_sigmoid_forward``).
    """
    kb = ctx.kernel(hint)
    idx = ctx.vars(kb, out.rank)
    stmts: list[Stmt] = [Assign(ctx.write(out, idx), fn(idx))]
    for extra, efn in extra_outputs:
        stmts.append(Assign(ctx.write(extra, idx), efn(idx)))
    kb.emit(*nest(list(zip(idx, out.shape, strict=True)), stmts))
    return kb


def fn(name: str, *args: Expr) -> Expr:
    """A library call ``name(args...)``."""
    return Call(name, tuple(args))


def sel(cond: Expr, a: Expr, b: Expr) -> Expr:
    """``select(cond, a, b)``."""
    return Call("select", (cond, a, b))


def binop(op: str, a: Expr, b: Expr) -> Expr:
    """``a op b``."""
    return Binary(op, a, b)


def tensor_arg(call: OpCall, index: int, name: str) -> TensorInfo:
    """A required tensor argument."""
    x = call.arg(index, name)
    if not isinstance(x, TensorInfo):
        raise UnsupportedOpError(f"{call.target}: argument {name} is not a tensor")
    return x


def copy_kernel(
    ctx: LowerCtx, src: TensorInfo | int | float | bool, out: TensorInfo, hint: str | None = None
) -> Sink:
    """``out = src`` (broadcast, cast to ``out``'s dtype) as one kernel."""
    return elementwise(ctx, out, lambda idx: operand(src, idx, out.shape, out.dtype), hint=hint)


def same_value(a: TensorInfo, b: TensorInfo) -> bool:
    """True when ``a`` and ``b`` are the same elements of the same tensor (in-place ops)."""
    if a.ref.name != b.ref.name or a.shape != b.shape:
        return False
    probe = tuple(Name(f"__probe{k}") for k in range(a.rank))
    return a.storage_index(probe) == b.storage_index(probe)
