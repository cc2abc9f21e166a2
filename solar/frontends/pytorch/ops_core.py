"""Lowerings of the matmul family, copies/casts and factory (fill) ops.

Contract: each matmul-like call is one kernel with a ``+=`` contraction over the
reduced dims, initialised with ``=`` (``beta * C`` or 0); ``alpha``/``beta`` other
than 1 are applied in a final statement, and 16/8-bit float outputs accumulate in a
kernel-local f32 buffer as eager kernels do. ``matmul``, ``linear`` and ``einsum``
decompose at dispatch into ``view``/``expand``/``permute``/``t`` (ops_movement.py) and
``mm``/``bmm``/``addmm`` (here). Copies (``clone``, ``_to_copy``, ``copy``) are one copy
kernel; factories that write memory (``zeros``, ``full``, ``arange``...) are one fill
kernel; ``empty*`` declares its output without a kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit import TensorInfo, UnsupportedOpError, accumulate_dtype, cast, nest
from solar.frontends.pytorch.lowering_utils import (
    binop,
    copy_kernel,
    elementwise,
    operand,
    out0,
    scalar_lit,
    sel,
    tensor_arg,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Binary, DType, Expr, IntLit, Name, Reduce, Stmt, lit

__all__ = ["contraction"]

Reader = Callable[[tuple[Name, ...], tuple[Name, ...]], Expr]
"""(output indices, reduction indices) -> operand value."""


def contraction(
    ctx: LowerCtx,
    out: TensorInfo,
    red_shape: Sequence[int],
    lhs: Reader,
    rhs: Reader,
    *,
    bias: Callable[[tuple[Name, ...]], Expr] | None = None,
    alpha: float = 1,
    beta: float = 1,
) -> None:
    """Emit ``out = beta * bias + alpha * sum_red lhs * rhs`` as one kernel.

    Args:
        ctx: lowering context.
        out: output tensor.
        red_shape: extents of the reduced (contracted) dims.
        lhs: left operand at (output idx, reduction idx), already in the compute type.
        rhs: right operand likewise.
        bias: the ``C`` term at output indices (``None``: no bias).
        alpha: scale of the product sum.
        beta: scale of the bias (0 ignores the bias entirely, as torch does).
    """
    kb = ctx.kernel()
    oidx = ctx.vars(kb, out.rank)
    ridx = ctx.vars(kb, len(red_shape), "k")
    acc_dtype = accumulate_dtype(out.dtype)
    use_bias = bias is not None and beta != 0
    bias_expr = bias(oidx) if use_bias and bias is not None else None
    local = acc_dtype != out.dtype or alpha != 1 or (use_bias and beta != 1)
    tgt = ctx.write(out, oidx)
    if local:
        acc_ref = kb.local(acc_dtype, out.shape, "acc")
        acc = acc_ref[tuple(oidx)] if out.rank else acc_ref.scalar()
    else:
        acc = tgt
    init: Expr = lit(0.0) if acc_dtype.is_float else lit(0)
    if bias_expr is not None and beta == 1 and alpha == 1:
        init = bias_expr
    prod: Expr = Binary("*", lhs(oidx, ridx), rhs(oidx, ridx))
    red: Stmt = Reduce(acc, "+", prod)
    body: list[Stmt] = [
        Assign(acc, init),
        *nest(list(zip(ridx, red_shape, strict=True)), [red]),
    ]
    if local:
        final: Expr = acc if alpha == 1 else binop("*", acc, scalar_lit(alpha, acc_dtype))
        if bias_expr is not None and not (beta == 1 and alpha == 1):
            term = bias_expr if beta == 1 else binop("*", bias_expr, scalar_lit(beta, acc_dtype))
            final = binop("+", final, term)
        body.append(Assign(tgt, final))
    if out.rank:
        kb.emit(*nest(list(zip(oidx, out.shape, strict=True)), body))
    else:
        kb.emit(*body)


def _rd(
    t: TensorInfo,
    dtype: DType,
    pick: Callable[[tuple[Name, ...], tuple[Name, ...]], Sequence[Expr]],
) -> Reader:
    def read(o: tuple[Name, ...], r: tuple[Name, ...]) -> Expr:
        return cast(LowerCtx.read(t, pick(o, r)), t.dtype, dtype)

    return read


def _bias(call: OpCall, out: TensorInfo, dtype: DType) -> Callable[[tuple[Name, ...]], Expr]:
    c = call.args[0]
    return lambda o: operand(c, o, out.shape, dtype)


def _scalars(call: OpCall, beta_pos: int, alpha_pos: int) -> tuple[float, float]:
    return call.arg(beta_pos, "beta", 1), call.arg(alpha_pos, "alpha", 1)


@LOWERINGS.register("aten.mm")
@LOWERINGS.register("aten._int_mm")  # int8 x int8 -> int32: the reads widen, as mm's do
def _mm(ctx: LowerCtx, call: OpCall) -> None:
    a, b, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "mat2"), out0(call)
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx,
        out,
        [a.shape[1]],
        _rd(a, dt, lambda o, r: (o[0], r[0])),
        _rd(b, dt, lambda o, r: (r[0], o[1])),
    )


@LOWERINGS.register("aten.addmm")
def _addmm(ctx: LowerCtx, call: OpCall) -> None:
    a, b, out = tensor_arg(call, 1, "mat1"), tensor_arg(call, 2, "mat2"), out0(call)
    beta, alpha = _scalars(call, 3, 4)
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx,
        out,
        [a.shape[1]],
        _rd(a, dt, lambda o, r: (o[0], r[0])),
        _rd(b, dt, lambda o, r: (r[0], o[1])),
        bias=_bias(call, out, dt),
        alpha=alpha,
        beta=beta,
    )


@LOWERINGS.register("aten.bmm")
def _bmm(ctx: LowerCtx, call: OpCall) -> None:
    a, b, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "mat2"), out0(call)
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx,
        out,
        [a.shape[2]],
        _rd(a, dt, lambda o, r: (o[0], o[1], r[0])),
        _rd(b, dt, lambda o, r: (o[0], r[0], o[2])),
    )


@LOWERINGS.register("aten.baddbmm")
def _baddbmm(ctx: LowerCtx, call: OpCall) -> None:
    a, b, out = tensor_arg(call, 1, "batch1"), tensor_arg(call, 2, "batch2"), out0(call)
    beta, alpha = _scalars(call, 3, 4)
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx,
        out,
        [a.shape[2]],
        _rd(a, dt, lambda o, r: (o[0], o[1], r[0])),
        _rd(b, dt, lambda o, r: (o[0], r[0], o[2])),
        bias=_bias(call, out, dt),
        alpha=alpha,
        beta=beta,
    )


@LOWERINGS.register("aten.addbmm")
def _addbmm(ctx: LowerCtx, call: OpCall) -> None:
    a, b, out = tensor_arg(call, 1, "batch1"), tensor_arg(call, 2, "batch2"), out0(call)
    beta, alpha = _scalars(call, 3, 4)
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx,
        out,
        [a.shape[0], a.shape[2]],
        _rd(a, dt, lambda o, r: (r[0], o[0], r[1])),
        _rd(b, dt, lambda o, r: (r[0], r[1], o[1])),
        bias=_bias(call, out, dt),
        alpha=alpha,
        beta=beta,
    )


@LOWERINGS.register("aten.mv")
def _mv(ctx: LowerCtx, call: OpCall) -> None:
    a, v, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "vec"), out0(call)
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx,
        out,
        [a.shape[1]],
        _rd(a, dt, lambda o, r: (o[0], r[0])),
        _rd(v, dt, lambda o, r: (r[0],)),
    )


@LOWERINGS.register("aten.addmv")
def _addmv(ctx: LowerCtx, call: OpCall) -> None:
    a, v, out = tensor_arg(call, 1, "mat"), tensor_arg(call, 2, "vec"), out0(call)
    beta, alpha = _scalars(call, 3, 4)
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx,
        out,
        [a.shape[1]],
        _rd(a, dt, lambda o, r: (o[0], r[0])),
        _rd(v, dt, lambda o, r: (r[0],)),
        bias=_bias(call, out, dt),
        alpha=alpha,
        beta=beta,
    )


@LOWERINGS.register("aten.dot", "aten.vdot", "aten.inner")
def _dot(ctx: LowerCtx, call: OpCall) -> None:
    a, b, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "tensor"), out0(call)
    if a.rank != 1 or b.rank != 1:
        raise UnsupportedOpError(f"{call.target}: expected vectors")
    dt = accumulate_dtype(out.dtype)
    contraction(
        ctx, out, [a.shape[0]], _rd(a, dt, lambda o, r: (r[0],)), _rd(b, dt, lambda o, r: (r[0],))
    )


@LOWERINGS.register("aten.addr")
def _addr(ctx: LowerCtx, call: OpCall) -> None:
    c = call.args[0]
    v1, v2, out = tensor_arg(call, 1, "vec1"), tensor_arg(call, 2, "vec2"), out0(call)
    beta, alpha = _scalars(call, 3, 4)
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


# -- copies and casts -------------------------------------------------------------------


@LOWERINGS.register(
    "aten.clone",
    "aten._to_copy",
    "aten.lift_fresh_copy",
    "aten.contiguous",
    "aten._to_dense",
    "aten.to",
)
def _copy(ctx: LowerCtx, call: OpCall) -> None:
    copy_kernel(ctx, tensor_arg(call, 0, "self"), out0(call))


@LOWERINGS.register("aten.copy")
def _copy_into(ctx: LowerCtx, call: OpCall) -> None:
    src, out = call.arg(1, "src"), out0(call)
    if isinstance(src, TensorInfo) and src.ref.name == out.ref.name:
        _copy_within(ctx, src, out)
        return
    copy_kernel(ctx, src, out)


def _copy_within(ctx: LowerCtx, src: TensorInfo, out: TensorInfo) -> None:
    """``copy_`` between two (non-overlapping, as torch requires) views of one tensor.

    Staged through a kernel-local buffer in two loop nests, so no plain loop both
    reads and writes the tensor (circular padding copies slices of its output).
    """
    kb = ctx.kernel()
    stage = kb.local(src.dtype, out.shape, "stage")
    idx = ctx.vars(kb, out.rank)
    to_stage = Assign(
        stage[tuple(idx)] if out.rank else stage.scalar(), operand(src, idx, out.shape)
    )
    idx2 = ctx.vars(kb, out.rank)
    from_stage = Assign(
        ctx.write(out, idx2),
        cast(stage[tuple(idx2)] if out.rank else stage.scalar(), src.dtype, out.dtype),
    )
    for ix, stmt in ((idx, to_stage), (idx2, from_stage)):
        kb.emit(*nest(list(zip(ix, out.shape, strict=True)), [stmt]))


# -- factories (fill kernels) -------------------------------------------------------------


@LOWERINGS.register(
    "aten.empty",
    "aten.empty_like",
    "aten.new_empty",
    "aten.empty_strided",
    "aten.new_empty_strided",
    "aten.empty_permuted",
)
def _empty(ctx: LowerCtx, call: OpCall) -> None:
    """Allocation only: the declared output is written by later (in-place) ops."""


def _fill(ctx: LowerCtx, call: OpCall, value: float | int | bool | TensorInfo) -> None:
    out = out0(call)
    if isinstance(value, TensorInfo):
        src = value
        elementwise(
            ctx, out, lambda idx: cast(LowerCtx.read(src, ()), src.dtype, out.dtype), hint="fill"
        )
        return
    elementwise(ctx, out, lambda idx: scalar_lit(value, out.dtype), hint="fill")


@LOWERINGS.register("aten.zeros", "aten.zeros_like", "aten.new_zeros", "aten.zero")
def _zeros(ctx: LowerCtx, call: OpCall) -> None:
    _fill(ctx, call, False if out0(call).dtype == DType.BOOL else 0)


@LOWERINGS.register("aten.ones", "aten.ones_like", "aten.new_ones")
def _ones(ctx: LowerCtx, call: OpCall) -> None:
    _fill(ctx, call, True if out0(call).dtype == DType.BOOL else 1)


@LOWERINGS.register("aten.full")
def _full(ctx: LowerCtx, call: OpCall) -> None:
    _fill(ctx, call, call.arg(1, "fill_value"))


@LOWERINGS.register("aten.full_like")
def _full_like(ctx: LowerCtx, call: OpCall) -> None:
    _fill(ctx, call, call.arg(1, "fill_value"))


@LOWERINGS.register("aten.new_full")
def _new_full(ctx: LowerCtx, call: OpCall) -> None:
    _fill(ctx, call, call.arg(2, "fill_value"))


@LOWERINGS.register("aten.fill")
def _fill_op(ctx: LowerCtx, call: OpCall) -> None:
    _fill(ctx, call, call.arg(1, "value"))


@LOWERINGS.register("aten.scalar_tensor")
def _scalar_tensor(ctx: LowerCtx, call: OpCall) -> None:
    _fill(ctx, call, call.arg(0, "s"))


@LOWERINGS.register("aten.arange")
def _arange(ctx: LowerCtx, call: OpCall) -> None:
    out = out0(call)
    nums = [a for a in call.args if isinstance(a, int | float) and not isinstance(a, bool)]
    start, step = (nums[0], nums[2] if len(nums) > 2 else 1) if len(nums) >= 2 else (0, 1)
    start = call.kwargs.get("start", start)
    step = call.kwargs.get("step", step)

    def value(idx: tuple[Name, ...]) -> Expr:
        i = cast(idx[0], DType.I64, out.dtype)
        term = i if step == 1 else binop("*", i, scalar_lit(step, out.dtype))
        return term if start == 0 else binop("+", scalar_lit(start, out.dtype), term)

    elementwise(ctx, out, value, hint="arange")


@LOWERINGS.register("aten.linspace")
def _linspace(ctx: LowerCtx, call: OpCall) -> None:
    out = out0(call)
    start, end, steps = call.arg(0, "start"), call.arg(1, "end"), call.arg(2, "steps")
    if not all(isinstance(v, int | float) for v in (start, end)):
        raise UnsupportedOpError("linspace with tensor bounds")
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    half = steps // 2

    def value(idx: tuple[Name, ...]) -> Expr:
        i = cast(idx[0], DType.I64, DType.F64)
        lo = binop("+", lit(float(start)), binop("*", i, lit(step)))
        back = binop("-", lit(steps - 1), idx[0])
        hi = binop("-", lit(float(end)), binop("*", cast(back, DType.I64, DType.F64), lit(step)))
        return cast(sel(binop("<", idx[0], IntLit(half)), lo, hi), DType.F64, out.dtype)

    elementwise(ctx, out, value, hint="linspace")


@LOWERINGS.register("aten.eye")
def _eye(ctx: LowerCtx, call: OpCall) -> None:
    out = out0(call)
    one, zero = scalar_lit(1, out.dtype), scalar_lit(0, out.dtype)
    elementwise(ctx, out, lambda idx: sel(binop("==", idx[0], idx[1]), one, zero), hint="eye")


@LOWERINGS.register("aten._local_scalar_dense", "aten.item")
def _item(ctx: LowerCtx, call: OpCall) -> None:
    """Reading one element to the host launches no kernel."""
