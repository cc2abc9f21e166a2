"""Lowerings of mixture-of-experts dispatch: ``_grouped_mm`` and ``one_hot``.

Contract: ``_grouped_mm(a, b, offs)`` with ``a: (M, K)``, ``b: (G, K, N)`` and ``offs:
(G,)`` the cumulative row ends of the groups (transformers' Mixtral/Qwen-MoE experts)
is one kernel: each row ``i`` first finds its group ``g(i) = #{g < G-1 : offs[g] <= i}``
in a kernel-local (``G-1`` comparisons per row), then ``out[i, n] = sum_k a[i, k] *
b[g(i), k, n]``. So the FLOPs are ``2 M K N`` whatever the routing (every row is in
exactly one group), and the expert weights read are those of the groups used. Rows past
``offs[G-1]`` (none in an MoE layer, where the groups cover every routed token) would
take the last group; validation would then disagree with eager, never silently pass.
``_grouped_mm(a, b)`` with 3-D ``a`` and ``b`` and no ``offs`` is a batched matmul.
The backward's weight gradient ``_grouped_mm(a: (K, M), b: (M, N), offs) -> (G, K, N)``
(the groups split the shared ``M``) scatters each row's outer product into its group.

Selection ops of the routing (``topk``, ``sort``, ``histc``, ``bincount``) are lowered
from the real run's values by the driver (`driver.ORDER_OPS`).
"""

from __future__ import annotations

from solar.frontends.kit import (
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    nest,
)
from solar.frontends.pytorch.lowering_utils import binop, out0, sel, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, Binary, DType, Expr, IntLit, Name, Reduce, Stmt, lit

__all__: list[str] = []


@LOWERINGS.register("aten._grouped_mm")
def _grouped_mm(ctx: LowerCtx, call: OpCall) -> None:
    a, b, out = tensor_arg(call, 0, "self"), tensor_arg(call, 1, "mat2"), out0(call)
    offs = call.arg(2, "offs")
    if call.arg(3, "bias") is not None:
        raise UnsupportedOpError("_grouped_mm with a bias")
    acc_dtype = accumulate_dtype(out.dtype)
    if acc_dtype != out.dtype:
        raise UnsupportedOpError("_grouped_mm into a 16-bit output")
    kb = ctx.kernel()
    if offs is None:
        if a.rank != 3 or b.rank != 3:
            raise UnsupportedOpError("_grouped_mm without offs needs 3-D operands")
        g, i, n = ctx.vars(kb, 3)
        (k,) = ctx.vars(kb, 1, "k")
        prod = Binary(
            "*",
            cast(a.at((g, i, k)), a.dtype, acc_dtype),
            cast(b.at((g, k, n)), b.dtype, acc_dtype),
        )
        body = [
            Assign(out.at((g, i, n)), lit(0.0)),
            *nest([(k, a.shape[2])], [Reduce(out.at((g, i, n)), "+", prod)]),
        ]
        kb.emit(*nest([(g, out.shape[0]), (i, out.shape[1]), (n, out.shape[2])], body))
        return
    if not isinstance(offs, TensorInfo) or a.rank != 2 or b.rank not in (2, 3) or offs.rank != 1:
        raise UnsupportedOpError("_grouped_mm: only 2-D x 3-D or 2-D x 2-D with offs")
    if b.rank == 2:
        _grouped_weight_grad(ctx, kb, a, b, offs, out)
        return
    rows, inner = a.shape
    groups, cols = b.shape[0], b.shape[2]
    i, n = ctx.vars(kb, 2)
    (k,) = ctx.vars(kb, 1, "k")
    find, grp = _group_of_row(ctx, kb, offs, i, rows, groups)
    prod = Binary(
        "*", cast(a.at((i, k)), a.dtype, acc_dtype), cast(b.at((grp, k, n)), b.dtype, acc_dtype)
    )
    tgt = out.at((i, n))
    mm = nest([(n, cols)], [Assign(tgt, lit(0.0)), *nest([(k, inner)], [Reduce(tgt, "+", prod)])])
    kb.emit(*nest([(i, rows)], [*find, *mm]))


def _group_of_row(
    ctx: LowerCtx, kb: Sink, offs: TensorInfo, i: Name, rows: int, groups: int
) -> tuple[list[Stmt], Expr]:
    """``g(i) = #{g < G-1 : offs[g] <= i}`` into a kernel-local; its statements and value."""
    (gv,) = ctx.vars(kb, 1, "g")
    grp = kb.local(DType.I64, [rows], "grp")[(i,)]
    find: list[Stmt] = [Assign(grp, IntLit(0))]
    if groups > 1:
        ends = cast(offs.at((gv,)), offs.dtype, DType.I64)
        step = sel(binop("<=", ends, i), IntLit(1), IntLit(0))
        find += nest([(gv, groups - 1)], [Reduce(grp, "+", step)])
    return find, grp


def _grouped_weight_grad(
    ctx: LowerCtx,
    kb: Sink,
    a: TensorInfo,
    b: TensorInfo,
    offs: TensorInfo,
    out: TensorInfo,
) -> None:
    """``_grouped_mm(a (K, M), b (M, N), offs) -> (G, K, N)``, the experts' weight gradient
    (groups split the shared ``M``): zeros, then each shared row ``i`` adds its outer
    product into its group, ``out[g(i), k, n] += a[k, i] * b[i, n]`` (``2 K M N`` FLOPs)."""
    acc_dtype = accumulate_dtype(out.dtype)
    groups, inner, cols = out.shape
    rows = a.shape[1]
    z = ctx.vars(kb, 3)
    kb.emit(*nest(list(zip(z, out.shape, strict=True)), [Assign(out.at(tuple(z)), lit(0.0))]))
    i, n = ctx.vars(kb, 2)
    (k,) = ctx.vars(kb, 1, "k")
    find, grp = _group_of_row(ctx, kb, offs, i, rows, groups)
    prod = Binary(
        "*", cast(a.at((k, i)), a.dtype, acc_dtype), cast(b.at((i, n)), b.dtype, acc_dtype)
    )
    scatter = Reduce(out.at((grp, k, n)), "+", prod)
    kb.emit(*nest([(i, rows)], [*find, *nest([(k, inner), (n, cols)], [scatter])]))
