"""Sum-of-products reductions as tensor contractions (matmul / broadcast loops).

Contract: `contract_reduce` recognises ``T[...] += f1 * f2 * ... * fn`` (factors are
accesses or any expression; literal and loop-invariant factors and ``/ x`` are
allowed) and returns the summed contributions over the reduced loop axes, computed
as a contraction of the factors' strided views (``np.matmul`` on reshaped operands
for large contractions, a short loop of broadcast multiply-adds over tiny contracted
extents such as 3x3 windows). It never materialises the full iteration grid: a
1024^3 matmul costs one BLAS call, a padded convolution one im2col copy.

Guards (padding, triangular bounds) enter as a 0/1 operand, or are dropped when the
zero padding of the operands already zeroes every masked product. Both rely on
``0 * x == 0``, so a contraction is used only when all factors are finite; otherwise
`contract_reduce` returns ``None`` and the caller evaluates the statement point-wise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from solar.ir import Access, Binary, Expr, FloatLit, IntLit, Reduce, Unary
from solar.validate.evaluate import Evaluator

__all__ = ["contract", "contract_reduce", "split_product"]

Operand = tuple[np.ndarray, tuple[int, ...]]

# Contracted extents up to this size, when one side has no free axes, run as a loop of
# broadcast multiply-adds (depthwise convolutions, pooling-like windows): cheaper than
# copying strided windows into a matmul operand.
SMALL_CONTRACTION = 32


def split_product(expr: Expr) -> tuple[float, list[tuple[Expr, bool]]]:
    """Split a product into a literal scale and factors ``(expr, divides)``.

    >>> from solar.ir import parse_expr, print_expr
    >>> scale, fs = split_product(parse_expr("-2.0 * A[i] * B[i] / C[i]"))
    >>> scale, [(print_expr(e), d) for e, d in fs]
    (-2.0, [('A[i]', False), ('B[i]', False), ('C[i]', True)])
    """
    scale = 1.0
    factors: list[tuple[Expr, bool]] = []

    def go(e: Expr, divides: bool) -> None:
        nonlocal scale
        match e:
            case Binary(op="*", lhs=a, rhs=b):
                go(a, divides)
                go(b, divides)
            case Binary(op="/", lhs=a, rhs=b) if not divides:
                go(a, False)
                go(b, True)
            case Unary(op="-", operand=o):
                scale = -scale
                go(o, divides)
            case IntLit(value=v) | FloatLit(value=v):
                scale = scale / v if divides and v != 0 else (scale if divides else scale * v)
                if divides and v == 0:
                    factors.append((e, True))
            case _:
                factors.append((e, divides))

    go(expr, False)
    return scale, factors


def _squeeze(arr: np.ndarray) -> Operand:
    axes = tuple(k for k, n in enumerate(arr.shape) if n > 1)
    return arr.reshape(tuple(arr.shape[k] for k in axes)), axes


def contract_reduce(
    ev: Evaluator, stmt: Reduce, target_axes: frozenset[int]
) -> np.ndarray | None:
    """Sum the products of ``stmt`` over the loop axes not in ``target_axes``.

    Args:
        ev: the evaluator of the statement (its domain and active mask).
        stmt: a ``+=`` reduction.
        target_axes: domain axes the target subscripts depend on.

    Returns:
        An array of ``domain.ndim`` dimensions (extent 1 off ``target_axes``), or
        ``None`` when the statement is not a worthwhile, safe contraction.
    """
    domain = ev.domain
    mask = domain.mask
    scale, factors = split_product(stmt.value)
    if len(factors) < 2 and mask is None:
        return None
    reduced = [k for k, n in enumerate(domain.shape) if n > 1 and k not in target_axes]
    if not reduced:
        return None
    operands: list[Operand] = []
    padded_reads: list[Access] = []
    finite = True
    for expr, divides in factors:
        if isinstance(expr, Access) and not divides:
            arr, padded = ev.read_checked(expr, mask)
            if padded:
                padded_reads.append(expr)
            if mask is not None:
                finite = finite and ev.state(expr).all_finite()
        else:
            value = ev.eval(expr, mask)
            arr = np.asarray(value)
            if arr.dtype == np.bool_:
                arr = arr.astype(np.int64)
            if divides:
                arr = 1.0 / arr
            if mask is not None and arr.dtype.kind == "f":
                finite = finite and bool(np.isfinite(arr).all())
        arr = arr.reshape(arr.shape + (1,) * (domain.ndim - arr.ndim)) if arr.ndim else arr
        if arr.ndim == 0 or all(n == 1 for n in arr.shape):
            scale = scale * arr.reshape(())
            continue
        operands.append(_squeeze(arr))
    if mask is not None:
        if not finite:
            return None
        inb: np.ndarray | bool = True
        for acc in padded_reads:
            inb = inb & ev.inbounds(acc)
        if not padded_reads or np.any(~mask & inb):
            dtype = np.result_type(*(op[0] for op in operands)) if operands else np.float64
            if dtype.kind != "f":
                dtype = np.dtype(np.float64)
            operands.append(_squeeze(mask.astype(dtype)))
    if not operands:
        return None
    present = {k for _, axes in operands for k in axes}
    multiplicity = math.prod(n for k, n in enumerate(domain.shape) if k in reduced and k not in present)
    out_axes = tuple(k for k in sorted(target_axes) if k in present)
    result = contract(operands, out_axes, domain.shape)
    shape = [1] * domain.ndim
    for k in out_axes:
        shape[k] = domain.shape[k]
    result = result.reshape(shape)
    factor = scale * multiplicity if multiplicity != 1 else scale
    if not (isinstance(factor, float) and factor == 1.0):
        result = result * np.asarray(factor).astype(result.dtype, copy=False)
    return result


def contract(
    operands: Sequence[Operand], out_axes: tuple[int, ...], extents: Sequence[int]
) -> np.ndarray:
    """Contract labelled operands (sum over every label not in ``out_axes``).

    Operands are combined pairwise, smallest intermediate first.

    >>> a = np.arange(6.0).reshape(2, 3); b = np.arange(12.0).reshape(3, 4)
    >>> bool(np.allclose(contract([(a, (0, 1)), (b, (1, 2))], (0, 2), [2, 3, 4]), a @ b))
    True
    """
    ops = [(arr, tuple(axes)) for arr, axes in operands]
    out = set(out_axes)
    ops = [_sum_private(arr, axes, _needed(i, ops, out)) for i, (arr, axes) in enumerate(ops)]
    while len(ops) > 1:
        best: tuple[int, int, int] | None = None
        for i, j in itertools.combinations(range(len(ops)), 2):
            keep = _needed_pair(i, j, ops, out)
            size = math.prod(extents[k] for k in set(ops[i][1]) | set(ops[j][1]) if k in keep)
            if best is None or size < best[0]:
                best = (size, i, j)
        assert best is not None
        _, i, j = best
        keep = _needed_pair(i, j, ops, out)
        merged = _contract_pair(ops[i], ops[j], keep)
        ops = [op for k, op in enumerate(ops) if k not in (i, j)] + [merged]
    arr, axes = _sum_private(*ops[0], out)
    return arr.transpose([axes.index(k) for k in out_axes]) if axes != out_axes else arr


def _needed(i: int, ops: Sequence[Operand], out: set[int]) -> set[int]:
    others = {k for j, (_, axes) in enumerate(ops) if j != i for k in axes}
    return out | others


def _needed_pair(i: int, j: int, ops: Sequence[Operand], out: set[int]) -> set[int]:
    others = {k for m, (_, axes) in enumerate(ops) if m not in (i, j) for k in axes}
    return out | others


def _sum_private(arr: np.ndarray, axes: tuple[int, ...], needed: set[int]) -> Operand:
    drop = tuple(p for p, k in enumerate(axes) if k not in needed)
    if not drop:
        return arr, axes
    return arr.sum(axis=drop), tuple(k for k in axes if k in needed)


def _contract_pair(a: Operand, b: Operand, keep: set[int]) -> Operand:
    (arr_a, ax_a), (arr_b, ax_b) = _sum_private(*a, keep | set(b[1])), _sum_private(
        *b, keep | set(a[1])
    )
    batch = [k for k in ax_a if k in ax_b and k in keep]
    contr = [k for k in ax_a if k in ax_b and k not in keep]
    a_only = [k for k in ax_a if k not in ax_b]
    b_only = [k for k in ax_b if k not in ax_a]
    ext_a = dict(zip(ax_a, arr_a.shape, strict=True))
    ext_b = dict(zip(ax_b, arr_b.shape, strict=True))
    n_batch = [ext_a[k] for k in batch]
    n_a = [ext_a[k] for k in a_only]
    n_b = [ext_b[k] for k in b_only]
    n_c = [ext_a[k] for k in contr]
    out_axes = (*batch, *a_only, *b_only)
    if not contr or (math.prod(n_c) <= SMALL_CONTRACTION and (not a_only or not b_only)):
        # broadcast multiply(-add) over the contracted positions
        ta = arr_a.transpose([ax_a.index(k) for k in (*contr, *batch, *a_only)])
        tb = arr_b.transpose([ax_b.index(k) for k in (*contr, *batch, *b_only)])
        ta = ta.reshape(ta.shape + (1,) * len(b_only))
        tb = tb.reshape(tb.shape[: len(contr) + len(batch)] + (1,) * len(a_only) + tb.shape[len(contr) + len(batch) :])
        if not contr:
            return ta * tb, out_axes
        acc: np.ndarray | None = None
        for pos in np.ndindex(*n_c):
            term = ta[pos] * tb[pos]
            if acc is None:
                acc = term
            else:
                acc += term
        assert acc is not None
        return acc, out_axes
    ma = arr_a.transpose([ax_a.index(k) for k in (*batch, *a_only, *contr)])
    mb = arr_b.transpose([ax_b.index(k) for k in (*batch, *contr, *b_only)])
    nb, m, n, k = math.prod(n_batch), math.prod(n_a), math.prod(n_b), math.prod(n_c)
    res = np.matmul(ma.reshape(nb, m, k), mb.reshape(nb, k, n))
    return res.reshape((*n_batch, *n_a, *n_b)), out_axes
