"""Sum-of-products reductions as tensor contractions (matmul / broadcast loops).

Contract: `plan_contraction` recognises ``T[...] += f1 * f2 * ... * fn`` (factors are
accesses or any expression; literal and loop-invariant factors and ``/ x`` are
allowed) and returns the summed contributions over the reduced loop axes, computed
as a contraction of the factors' strided views (``np.matmul`` on reshaped operands
for large contractions, a short loop of broadcast multiply-adds over tiny contracted
extents such as 3x3 windows). It never materialises the full iteration grid: a
1024^3 matmul costs one BLAS call, a padded convolution one im2col copy.

Guards (padding, triangular bounds) enter as a 0/1 operand, or are dropped when the
zero padding of the operands already zeroes every masked product. Both rely on
``0 * x == 0``, so a contraction is used only when all factors are finite; otherwise
the caller evaluates the statement point-wise. `run_contraction` executes a plan on
one chunk of the domain.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solar.ir import Access, Binary, Expr, FloatLit, IntLit, Reduce, Unary
from solar.validate import parallel
from solar.validate.evaluate import Evaluator
from solar.validate.grids import blocks, box_range

__all__ = ["ContractionPlan", "contract", "plan_contraction", "run_contraction", "split_product"]

ArrayOperand = tuple[np.ndarray, tuple[int, ...]]

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


def _squeeze(arr: np.ndarray) -> ArrayOperand:
    axes = tuple(k for k, n in enumerate(arr.shape) if n > 1)
    return arr.reshape(tuple(arr.shape[k] for k in axes)), axes


@dataclass(frozen=True, slots=True)
class ContractionPlan:
    """How to run one ``+=`` statement as a contraction (decided on its whole domain).

    Attributes:
        scale: the literal factor.
        factors: ``(expr, divides)`` per non-literal factor.
        mask_operand: multiply by the guard mask (it is not implied by zero padding).
        target_axes: domain axes of the target.
    """

    scale: float
    factors: tuple[tuple[Expr, bool], ...]
    mask_operand: bool
    target_axes: frozenset[int]


def plan_contraction(
    ev: Evaluator, stmt: Reduce, target_axes: frozenset[int]
) -> ContractionPlan | None:
    """Decide whether ``stmt`` runs as a contraction over ``ev.domain``.

    Also bounds-checks every factor access over the whole domain, so the chunks run
    by `run_contraction` need not (``ev.verified`` is extended).

    Returns:
        The plan, or ``None`` when the statement is better run point-wise: a single
        factor without a guard, no reduced axis, or a guard with non-finite data.
    """
    domain = ev.domain
    mask = domain.mask
    scale, factors = split_product(stmt.value)
    if len(factors) < 2 and mask is None:
        return None
    if not any(n > 1 and k not in target_axes for k, n in enumerate(domain.shape)):
        return None
    padded: list[Access] = []
    for expr, divides in factors:
        if not isinstance(expr, Access) or divides:
            continue
        forms = ev.forms(expr)
        if forms is None or not ev.viewable(forms):
            continue
        st = ev.state(expr)
        if mask is not None and not st.all_finite():
            return None
        if any(
            lo < 0 or hi >= n
            for (lo, hi), n in zip(
                (box_range(f, domain) for f in forms), st.data.shape, strict=True
            )
        ):
            ev.check_bounds(expr, forms, st.data.shape, mask)
            padded.append(expr)
        ev.verified.add(id(expr))
    mask_operand = False
    if mask is not None:
        inb: np.ndarray | bool = True
        for acc in padded:
            inb = inb & ev.inbounds(acc)
        mask_operand = not padded or bool(np.any(~mask & inb))
    return ContractionPlan(scale, tuple(factors), mask_operand, target_axes)


def run_contraction(ev: Evaluator, plan: ContractionPlan) -> np.ndarray | None:
    """Sum the products of a planned contraction over the reduced axes of ``ev.domain``.

    Returns:
        An array of ``domain.ndim`` dimensions (extent 1 off the target axes), or
        ``None`` when this piece must run point-wise (non-finite computed factors
        under a guard, or no reduced axis left in this chunk).
    """
    domain = ev.domain
    mask = domain.mask
    reduced = [k for k, n in enumerate(domain.shape) if n > 1 and k not in plan.target_axes]
    if not reduced:
        return None
    scale: float | np.ndarray = plan.scale
    operands: list[ArrayOperand] = []
    seen: dict[Expr, np.ndarray] = {}  # (X - m) * (X - m): evaluate once
    for expr, divides in plan.factors:
        arr = _factor(ev, expr, divides, seen)
        if arr is None:
            return None
        if arr.ndim == 0 or all(n == 1 for n in arr.shape):
            scale = scale * arr.reshape(())
            continue
        operands.append(_squeeze(arr))
    if plan.mask_operand and mask is not None:
        dtype = np.result_type(*(op[0] for op in operands)) if operands else np.dtype(np.float64)
        operands.append(_squeeze(mask.astype(dtype if dtype.kind == "f" else np.float64)))
    if not operands:
        return None
    present = {k for _, axes in operands for k in axes}
    multiplicity = math.prod(
        n for k, n in enumerate(domain.shape) if k in reduced and k not in present
    )
    out_axes = tuple(k for k in sorted(plan.target_axes) if k in present)
    result = contract(operands, out_axes, domain.shape)
    shape = [1] * domain.ndim
    for k in out_axes:
        shape[k] = domain.shape[k]
    result = result.reshape(shape)
    factor = scale * multiplicity
    if not (isinstance(factor, float) and factor == 1.0):
        result = result * np.asarray(factor).astype(result.dtype, copy=False)
    return result


def _factor(
    ev: Evaluator, expr: Expr, divides: bool, seen: dict[Expr, np.ndarray]
) -> np.ndarray | None:
    """One factor's values over ``ev.domain`` (its reciprocal when it divides), or
    ``None`` when a computed factor is non-finite under a guard (run point-wise)."""
    mask = ev.domain.mask
    if isinstance(expr, Access) and not divides:
        return ev.read(expr, mask)
    if expr in seen and not divides:
        return seen[expr]
    arr = np.asarray(ev.eval(expr, mask))
    seen[expr] = arr
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if divides:
        arr = 1.0 / arr
    if mask is not None and arr.dtype.kind == "f" and not np.isfinite(arr).all():
        return None
    return arr


def contract(
    operands: Sequence[ArrayOperand], out_axes: tuple[int, ...], extents: Sequence[int]
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


def _needed(i: int, ops: Sequence[ArrayOperand], out: set[int]) -> set[int]:
    others = {k for j, (_, axes) in enumerate(ops) if j != i for k in axes}
    return out | others


def _needed_pair(i: int, j: int, ops: Sequence[ArrayOperand], out: set[int]) -> set[int]:
    others = {k for m, (_, axes) in enumerate(ops) if m not in (i, j) for k in axes}
    return out | others


def _sum_private(arr: np.ndarray, axes: tuple[int, ...], needed: set[int]) -> ArrayOperand:
    drop = tuple(p for p, k in enumerate(axes) if k not in needed)
    if not drop:
        return arr, axes
    return arr.sum(axis=drop), tuple(k for k in axes if k in needed)


def _contract_pair(a: ArrayOperand, b: ArrayOperand, keep: set[int]) -> ArrayOperand:
    arr_a, ax_a = _sum_private(*a, keep | set(b[1]))
    arr_b, ax_b = _sum_private(*b, keep | set(a[1]))
    batch = [k for k in ax_a if k in ax_b and k in keep]
    contr = [k for k in ax_a if k in ax_b and k not in keep]
    a_only = [k for k in ax_a if k not in ax_b]
    b_only = [k for k in ax_b if k not in ax_a]
    ext = {**dict(zip(ax_a, arr_a.shape, strict=True)), **dict(zip(ax_b, arr_b.shape, strict=True))}
    if contr and not a_only and not b_only:
        return _dot_pair(arr_a, ax_a, arr_b, ax_b, batch, contr)
    if not contr or (
        math.prod(ext[k] for k in contr) <= SMALL_CONTRACTION and (not a_only or not b_only)
    ):
        return _broadcast_pair(arr_a, ax_a, arr_b, ax_b, contr)
    # The contracted order follows the larger operand's memory order (cheaper copy).
    big, big_axes = (arr_a, ax_a) if arr_a.size >= arr_b.size else (arr_b, ax_b)
    contr = sorted(contr, key=lambda k: -abs(big.strides[big_axes.index(k)]))
    # Put the free axes that come last in domain order last in the result (usually
    # the target's innermost axes), so adding the result into the target is cheap.
    if max(a_only, default=-1) > max(b_only, default=-1):
        (arr_a, ax_a, a_only), (arr_b, ax_b, b_only) = (arr_b, ax_b, b_only), (arr_a, ax_a, a_only)
    left = _matrix(arr_a, ax_a, batch, a_only, contr)
    right = _matrix(arr_b, ax_b, batch, contr, b_only)
    res = np.matmul(left, right)
    shape = [ext[k] for k in (*batch, *a_only, *b_only)]
    return res.reshape(shape), (*batch, *a_only, *b_only)


def _matrix(
    arr: np.ndarray, axes: tuple[int, ...], batch: list[int], rows: list[int], cols: list[int]
) -> np.ndarray:
    """``arr`` as a ``(batch, rows, cols)`` stack of matrices for ``np.matmul``.

    Free (row or column) axes are ordered by decreasing stride. When a copy is needed,
    it is made in whichever of the two layouts (rows-major or columns-major) reads
    the source most contiguously; BLAS takes either orientation without a copy.
    """
    stride = {k: abs(arr.strides[axes.index(k)]) for k in axes}
    ext = {k: arr.shape[axes.index(k)] for k in axes}
    nb = math.prod(ext[k] for k in batch)
    n_rows = math.prod(ext[k] for k in rows)
    n_cols = math.prod(ext[k] for k in cols)

    def inner_key(group: list[int]) -> tuple[int, int]:
        if not group:
            return (1 << 62, 0)
        last = group[-1]
        return (stride[last], -ext[last])

    row_major = arr.transpose([axes.index(k) for k in (*batch, *rows, *cols)])
    col_major = arr.transpose([axes.index(k) for k in (*batch, *cols, *rows)])
    groups = (len(batch), len(rows), len(cols))
    if _mergeable(row_major, groups):
        return row_major.reshape(nb, n_rows, n_cols)
    if _mergeable(col_major, (groups[0], groups[2], groups[1])):
        return col_major.reshape(nb, n_cols, n_rows).swapaxes(1, 2)
    if inner_key(rows) < inner_key(cols):
        return np.ascontiguousarray(col_major).reshape(nb, n_cols, n_rows).swapaxes(1, 2)
    return np.ascontiguousarray(row_major).reshape(nb, n_rows, n_cols)


def _dot_pair(
    arr_a: np.ndarray,
    ax_a: tuple[int, ...],
    arr_b: np.ndarray,
    ax_b: tuple[int, ...],
    batch: list[int],
    contr: list[int],
) -> ArrayOperand:
    """Batched dot products (no free axes on either side): ``np.vecdot`` on the
    contracted axes flattened last (``sum((x - m) * (x - m))``)."""
    order = (*batch, *contr)
    ta = arr_a.transpose([ax_a.index(k) for k in order])
    tb = arr_b.transpose([ax_b.index(k) for k in order])
    nb = len(batch)
    flat = (*ta.shape[:nb], -1)
    a, b = ta.reshape(flat), tb.reshape(flat)
    if hasattr(np, "vecdot"):  # numpy >= 2
        return np.vecdot(a, b), tuple(batch)
    return np.einsum("...i,...i->...", a, b), tuple(batch)


def _mergeable(arr: np.ndarray, groups: tuple[int, ...]) -> bool:
    """True when consecutive runs of ``groups`` axes of ``arr`` reshape without a copy.

    (Setting ``.shape`` to probe this is very slow on large strided views in numpy 2.)
    """
    start = 0
    for size in groups:
        axes = [k for k in range(start, start + size) if arr.shape[k] != 1]
        for a, b in itertools.pairwise(axes):
            if arr.strides[a] != arr.strides[b] * arr.shape[b]:
                return False
        start += size
    return True


def _broadcast_pair(
    arr_a: np.ndarray,
    ax_a: tuple[int, ...],
    arr_b: np.ndarray,
    ax_b: tuple[int, ...],
    contr: list[int],
) -> ArrayOperand:
    """Sum over ``contr`` of broadcast products, one contracted position at a time.

    The result keeps the domain order of its axes (usually the target's memory
    order) and is computed in cache-sized blocks (`blocks`), each accumulating all
    contracted positions in place: a 3x3 window costs nine multiply-adds over a block
    that stays in cache, and no copy of the windows.
    """
    out_axes = tuple(sorted((set(ax_a) | set(ax_b)) - set(contr)))
    order = (*contr, *out_axes)
    ta = _expand(arr_a, ax_a, order)
    tb = _expand(arr_b, ax_b, order)
    if not contr:
        return ta * tb, out_axes
    nc = len(contr)
    out_shape = np.broadcast_shapes(ta.shape[nc:], tb.shape[nc:])
    acc = np.empty(out_shape, dtype=np.result_type(ta, tb))
    positions = list(np.ndindex(*(max(ta.shape[p], tb.shape[p]) for p in range(nc))))

    def run(todo: list[tuple[slice, ...]]) -> None:
        for blk in todo:
            sa = tuple(b if ta.shape[nc + i] > 1 else slice(None) for i, b in enumerate(blk))
            sb = tuple(b if tb.shape[nc + i] > 1 else slice(None) for i, b in enumerate(blk))
            acc_b = acc[blk] if acc.ndim else acc[...]  # (a 0-d index would copy)
            tmp = np.empty_like(acc_b)
            for k, pos in enumerate(positions):
                pa = tuple(p if ta.shape[i] > 1 else 0 for i, p in enumerate(pos))
                pb = tuple(p if tb.shape[i] > 1 else 0 for i, p in enumerate(pos))
                if k == 0:
                    np.multiply(ta[(*pa, *sa)], tb[(*pb, *sb)], out=acc_b)
                else:
                    np.multiply(ta[(*pa, *sa)], tb[(*pb, *sb)], out=tmp)
                    np.add(acc_b, tmp, out=acc_b)

    parallel.run_blocks(run, list(blocks(out_shape)), acc.size)
    return acc, out_axes


def _expand(arr: np.ndarray, axes: tuple[int, ...], order: tuple[int, ...]) -> np.ndarray:
    """``arr`` (labelled ``axes``) transposed to ``order``, extent 1 for missing labels."""
    present = [k for k in order if k in axes]
    moved = arr.transpose([axes.index(k) for k in present])
    return moved.reshape([moved.shape[present.index(k)] if k in axes else 1 for k in order])
