"""The contraction emitter: ``dot_general``, which every matmul-like op is an instance of.

Contract: `emit_dot_general` emits one kernel ``out = sum_k lhs * rhs`` over the
contracting dims, for any batch and contracting dimension numbers (JAX's ``dot_general``;
PyTorch's ``mm``/``bmm``/``mv``/``dot``/``addbmm`` and, after dispatch, ``matmul``,
``linear`` and ``einsum``). The output's dims are the batch dims, then the free dims of
``lhs``, then those of ``rhs``, in order. The kernel is::

    for i... { acc[i...] = init; for k... { acc[i...] += lhs[...] * rhs[...] } }

(2 FLOPs per multiply-add), with operands read in the accumulate dtype
(`solar.frontends.kit.accumulate_dtype`: f32 for 16/8-bit floats) and ``acc`` the output
itself unless a kernel-local is needed (low precision, or an epilogue ``alpha * acc +
beta * bias``, PyTorch's ``addmm``). Without contracting dims it is a plain product
(1 FLOP). No torch, no jax.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from solar.frontends.kit.context import LowerCtx, Sink
from solar.frontends.kit.dtypes import accumulate_dtype, cast, zero
from solar.frontends.kit.emit.operand import Operand
from solar.frontends.kit.index import nest
from solar.frontends.kit.table import UnsupportedOpError
from solar.frontends.kit.values import TensorInfo
from solar.ir import Access, Assign, Binary, DType, Expr, IntLit, Name, Reduce, Stmt, lit

__all__ = ["DotDims", "Epilogue", "emit_dot_general"]


@dataclass(frozen=True, slots=True)
class DotDims:
    """``dot_general``'s dimension numbers.

    Attributes:
        lhs_contract / rhs_contract: the contracted dims of each operand, paired in order.
        lhs_batch / rhs_batch: the batch dims of each operand, paired in order.
    """

    lhs_contract: tuple[int, ...]
    rhs_contract: tuple[int, ...]
    lhs_batch: tuple[int, ...] = ()
    rhs_batch: tuple[int, ...] = ()

    @staticmethod
    def matmul(lhs_rank: int, rhs_rank: int, batch: int = 0) -> DotDims:
        """A (batched) matrix or vector product: the last dim of ``lhs`` against the
        first non-batch dim of ``rhs`` (its last for a vector), ``batch`` leading dims.

        >>> DotDims.matmul(3, 3, batch=1)
        DotDims(lhs_contract=(2,), rhs_contract=(1,), lhs_batch=(0,), rhs_batch=(0,))
        """
        b = tuple(range(batch))
        return DotDims((lhs_rank - 1,), (batch if rhs_rank > batch + 1 else rhs_rank - 1,), b, b)


@dataclass(frozen=True, slots=True)
class Epilogue:
    """``out = alpha * sum + beta * bias`` (PyTorch's ``addmm`` family).

    Attributes:
        bias: the bias term at output indices, in the accumulate dtype.
        alpha, beta: the scales; ``beta == 0`` ignores the bias entirely, as torch does.
    """

    bias: Callable[[tuple[Name, ...]], Expr] | None = None
    alpha: float = 1
    beta: float = 1


def _number(value: float, dtype: DType) -> Expr:
    return lit(float(value)) if dtype.is_float else lit(int(value))


def emit_dot_general(
    ctx: LowerCtx,
    out: TensorInfo,
    lhs: Operand,
    rhs: Operand,
    dims: DotDims,
    epilogue: Epilogue | None = None,
) -> None:
    """Emit ``out = dot_general(lhs, rhs, dims)`` (then ``epilogue``) as one kernel.

    Raises:
        UnsupportedOpError: the dimension numbers do not fit the shapes.
    """
    lc, rc, lb, rb = dims.lhs_contract, dims.rhs_contract, dims.lhs_batch, dims.rhs_batch
    a_free = [d for d in range(len(lhs.shape)) if d not in lc and d not in lb]
    b_free = [d for d in range(len(rhs.shape)) if d not in rc and d not in rb]
    if len(lc) != len(rc) or len(lb) != len(rb) or len(lb) + len(a_free) + len(b_free) != out.rank:
        raise UnsupportedOpError("dot_general dimension numbers do not fit the shapes")
    if 0 in out.shape:
        return  # nothing to compute: the frontend writes empty outputs (``empty_output``)
    kb = ctx.kernel()
    oidx = ctx.vars(kb, out.rank)
    ridx = ctx.vars(kb, len(lc), "k")
    dt = accumulate_dtype(out.dtype)

    def read(
        x: Operand, batch: Sequence[int], contract: Sequence[int], free: Sequence[int], at: int
    ) -> Expr:
        idx: list[Expr] = [IntLit(0)] * len(x.shape)
        for pos, d in enumerate(batch):
            idx[d] = oidx[pos]
        for pos, d in enumerate(contract):
            idx[d] = ridx[pos]
        for pos, d in enumerate(free):
            idx[d] = oidx[len(batch) + at + pos]
        return cast(x.at(idx), x.dtype, dt)

    prod = Binary("*", read(lhs, lb, lc, a_free, 0), read(rhs, rb, rc, b_free, len(a_free)))
    tgt = ctx.write(out, oidx)
    if not lc and epilogue is None:
        body: list[Stmt] = [Assign(tgt, prod)]  # a plain product: 1 FLOP
    else:
        red = [(k, lhs.shape[d]) for k, d in zip(ridx, lc, strict=True)]
        body = _accumulate(kb, out, oidx, tgt, prod, red, epilogue or Epilogue())
    kb.emit(*nest(list(zip(oidx, out.shape, strict=True)), body))


def _accumulate(
    kb: Sink,
    out: TensorInfo,
    oidx: tuple[Name, ...],
    tgt: Access,
    prod: Expr,
    red: list[tuple[Name, int]],
    epi: Epilogue,
) -> list[Stmt]:
    """``acc = init; acc += prod`` over the loops ``red``, then the epilogue into
    ``tgt``; ``acc`` is ``tgt`` unless a local is needed."""
    dt = accumulate_dtype(out.dtype)
    bias = epi.bias(oidx) if epi.bias is not None and epi.beta != 0 else None
    local = dt != out.dtype or epi.alpha != 1 or (bias is not None and epi.beta != 1)
    acc = tgt
    if local:
        acc_ref = kb.local(dt, out.shape, "acc")
        acc = acc_ref[tuple(oidx)] if out.rank else acc_ref.scalar()
    init: Expr = zero(dt)
    plain = epi.beta == 1 and epi.alpha == 1
    if bias is not None and plain:
        init = bias
    body: list[Stmt] = [Assign(acc, init), *nest(red, [Reduce(acc, "+", prod)])]
    if local:
        final: Expr = acc if epi.alpha == 1 else Binary("*", acc, _number(epi.alpha, dt))
        if bias is not None and not plain:
            term = bias if epi.beta == 1 else Binary("*", bias, _number(epi.beta, dt))
            final = Binary("+", final, term)
        body.append(Assign(tgt, final))
    return body
