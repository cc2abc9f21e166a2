"""``aten._scaled_mm``: an fp8 matmul with per-tensor or per-row/column scales, one kernel.

Contract: ``out[m, n] = cast((sum_k f32(a[m, k]) * f32(b[k, n])) * scale_a * scale_b
(+ bias))`` in one kernel (as the one cuBLASLt launch it is on the device), the product
sum in a kernel-local f32 accumulator. The operands' dtype (fp8) puts the contraction
on the fp8 tensor-core roof (issue 28 item 7: it was uncovered, 13.9x loose).
"""

from __future__ import annotations

from solar.frontends.kit import TensorInfo, UnsupportedOpError, nest
from solar.frontends.kit.dtypes import cast
from solar.frontends.pytorch.lowering_utils import operand, out0, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Binary, DType, Expr, Reduce, lit

__all__: list[str] = []


@LOWERINGS.register("aten._scaled_mm")
def _scaled_mm(ctx: LowerCtx, call: OpCall) -> None:
    """``(self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None,
    use_fast_accum=False)``."""
    a, b, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "mat2"), out0(call)
    scales = [call.arg(2, "scale_a"), call.arg(3, "scale_b")]
    bias, result_scale = call.arg(4, "bias"), call.arg(5, "scale_result")
    if result_scale is not None or not all(isinstance(s, TensorInfo) for s in scales):
        raise UnsupportedOpError("_scaled_mm: scale_result or non-tensor scales")
    if a.rank != 2 or b.rank != 2 or out.rank != 2:
        raise UnsupportedOpError("_scaled_mm: operands of rank 2 only")
    kb = ctx.kernel()
    (m, n), (k,) = ctx.vars(kb, 2), ctx.vars(kb, 1, "k")
    acc_ref = kb.local(DType.F32, out.shape, "acc")
    acc = acc_ref[(m, n)]
    prod = Binary("*", cast(LowerCtx.read(a, (m, k)), a.dtype, DType.F32),
                  cast(LowerCtx.read(b, (k, n)), b.dtype, DType.F32))
    value: Expr = acc
    for s in scales:
        value = Binary("*", value, operand(s, (m, n), out.shape, DType.F32))
    if isinstance(bias, TensorInfo):
        value = Binary("+", value, operand(bias, (m, n), out.shape, DType.F32))
    body = [
        Assign(acc, lit(0.0)),
        *nest([(k, a.shape[1])], [Reduce(acc, "+", prod)]),
        Assign(ctx.write(out, (m, n)), cast(value, DType.F32, out.dtype)),
    ]
    kb.emit(*nest(list(zip((m, n), out.shape, strict=True)), body))
