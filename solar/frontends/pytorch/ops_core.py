"""Lowerings of copies/casts and factory (fill) ops (the matmul family is ops_contraction.py).

Contract: copies (``clone``, ``_to_copy``, ``copy``) are one copy
kernel; factories that write memory (``zeros``, ``full``, ``arange``...) are one fill
kernel; ``empty*`` declares its output without a kernel.
"""

from __future__ import annotations

from solar.frontends.kit import TensorInfo, UnsupportedOpError, cast, nest
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
from solar.ir import Assign, DType, Expr, IntLit, Name, lit

__all__: list[str] = []

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
        idx = tuple(Name(f"_e{d}") for d in range(out.rank))
        if src.dtype == out.dtype and src.shape == out.shape and (
                operand(src, idx, out.shape) == ctx.write(out, idx)):
            # the same elements (``x[:, :4] += 1`` writes its slice back onto itself):
            # ATen's copy_ returns early when source and destination are one view
            return
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
