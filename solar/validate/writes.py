"""Writing statement results into tensors: stores (``=``) and reductions (``+=`` ...).

Contract: `store` and `reduce_into` take values already computed over a domain (arrays
of ``domain.ndim`` dimensions) and update a `TensorState` at the active points only,
keeping its written mask. Targets whose subscripts are affine and injective over the
domain are updated through one strided view (``np.copyto``/in-place ufuncs); any other
target (``Y[i // 2]``, ``H[idx[i]]``, colliding writes) is updated element-wise with
fancy indexing (``ufunc.at`` for reductions, so repeated indices accumulate). Values
are rounded to the target dtype on store (Note [Executor dtypes]).
"""

from __future__ import annotations

import math

import numpy as np

from solar.ir import Access, DType, Expr, Lin, ReduceOp
from solar.validate import parallel
from solar.validate.dtypes import round_to_dtype
from solar.validate.evaluate import Evaluator, Value
from solar.validate.grids import (
    SMALL_REDUCTION,
    TargetPlan,
    affine_view,
    blocks,
    box_range,
    broadcast_shape,
    is_injective,
)
from solar.validate.state import TensorState

__all__ = ["REDUCE_UFUNCS", "exact_dtype", "reduce_identity", "reduce_into", "store", "target_axes"]

REDUCE_UFUNCS: dict[str, np.ufunc] = {
    "+": np.add,
    "*": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}

_EXACT = frozenset({DType.F64, DType.F32, DType.I64, DType.BOOL})


def exact_dtype(dtype: DType) -> bool:
    """True when the storage dtype *is* the IR dtype (no rounding needed on store)."""
    return dtype in _EXACT


def reduce_identity(op: ReduceOp, dtype: np.dtype[np.generic]) -> float | int:
    """The identity element of a reduction in ``dtype``."""
    if op == "+":
        return 0
    if op == "*":
        return 1
    if dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    info = np.iinfo(np.int64)
    return info.min if op == "max" else info.max


def target_axes(ev: Evaluator, target: Access) -> TargetPlan | None:
    """Affine forms and used domain axes of a target that one strided view can update.

    Returns ``None`` when the target needs element-wise updates: non-affine or sampled
    subscripts, a box reaching outside the tensor, or colliding points.
    """
    plans = ev.domain.recipes.targets
    key = id(target)
    if key in plans:
        return plans[key]
    plan = _target_axes(ev, target)
    plans[key] = plan
    return plan


def _target_axes(ev: Evaluator, target: Access) -> TargetPlan | None:
    st = ev.state(target)
    forms = ev.forms(target)
    if forms is None or not ev.viewable(forms):
        return None
    for form, extent in zip(forms, st.data.shape, strict=True):
        lo, hi = box_range(form, ev.domain)
        if lo < 0 or hi >= extent:
            ev.check_bounds(target, forms, st.data.shape, ev.domain.mask)
            return None
    if not is_injective(forms, st.data.shape, ev.domain):
        return None
    axes = frozenset(
        ev.domain.axes[v].index
        for form in forms
        for v, _ in form.coefs
        if v in ev.domain.axes and ev.domain.axes[v].count > 1
    )
    return forms, axes


def _axes_of(shape: tuple[int, ...]) -> frozenset[int]:
    return frozenset(k for k, n in enumerate(shape) if n > 1)


def _check_writable(ev: Evaluator, st: TensorState) -> None:
    if st.decl.role in ("input", "param"):
        ev.fault("E0309", f"write to {st.decl.role} `{st.decl.name}`")


def assign(ev: Evaluator, target: Access, expr: Expr) -> None:
    """``target = expr`` at the active points, computing the last operation in place.

    When the target is one strided view covering the value, the statement has no
    guard and the dtype needs no rounding, the final ufunc writes straight into the
    tensor (numpy resolves any overlap with the operands).
    """
    st = ev.state(target)
    _check_writable(ev, st)
    mask = ev.domain.mask
    split = ev.split_last(expr, mask) if mask is None and exact_dtype(st.decl.dtype) else None
    if split is None:
        store(ev, target, ev.eval(expr, mask))
        return
    ufunc, args = split
    plan = target_axes(ev, target)
    if plan is not None:
        forms, axes = plan
        shape = broadcast_shape(*(np.shape(a) for a in args))
        kind = np.result_type(*args).kind
        if _axes_of(shape) <= axes and kind == st.data.dtype.kind and len(shape) == ev.domain.ndim:
            view = affine_view(st.data, forms, ev.domain)
            ufunc(*args, out=view, casting="same_kind")
            _mark_written(st, forms, ev, view.size, None)
            return
    store(ev, target, ufunc(*args))


def _mark_written(
    st: TensorState, forms: tuple[Lin, ...], ev: Evaluator, count: int, mask: np.ndarray | None
) -> None:
    """Record a strided write of ``count`` distinct elements (all of them when unmasked)."""
    written = st.written  # one read: another thread may drop the mask meanwhile
    if written is not None:
        if mask is None and count == st.data.size:
            st.written = None  # the view covers every element: no mask bookkeeping
        elif mask is None:
            affine_view(written, forms, ev.domain)[...] = True
        else:
            np.copyto(affine_view(written, forms, ev.domain), True, where=mask)
    st.mark_changed()


def store(ev: Evaluator, target: Access, value: Value) -> None:
    """``target = value`` at the active points of the evaluator's domain."""
    st = ev.state(target)
    _check_writable(ev, st)
    mask = ev.domain.mask
    val = round_to_dtype(np.asarray(value), st.decl.dtype)
    plan = target_axes(ev, target)
    if plan is not None:
        forms, axes = plan
        used = _axes_of(val.shape) | (_axes_of(mask.shape) if mask is not None else frozenset())
        if used <= axes:
            view = affine_view(st.data, forms, ev.domain)
            if mask is None:
                view[...] = val
            else:
                np.copyto(view, val, where=mask)
            _mark_written(st, forms, ev, view.size, mask)
            return
    index, vals = _scatter_points(ev, target, val)
    st.data[index] = vals
    written = st.written
    if written is not None:
        written[index] = True
    st.mark_changed()


def _scatter_points(
    ev: Evaluator, target: Access, val: np.ndarray, *, all_axes: bool = False
) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Active points of an element-wise update, flattened in iteration order."""
    mask = ev.domain.mask
    idx = ev.index_arrays(target, mask)
    shapes = [np.shape(ix) for ix in idx] + [val.shape]
    if mask is not None:
        shapes.append(mask.shape)
    if all_axes:
        shapes.append(ev.domain.shape)
    full = np.broadcast_shapes(*shapes) if shapes else ()
    if mask is not None:
        sel = np.broadcast_to(mask, full)
        index = tuple(np.broadcast_to(np.asarray(ix, dtype=np.intp), full)[sel] for ix in idx)
        return index, np.broadcast_to(val, full)[sel]
    index = tuple(np.broadcast_to(np.asarray(ix, dtype=np.intp), full).ravel() for ix in idx)
    return index, np.broadcast_to(val, full).ravel()


def _check_target_written(
    ev: Evaluator, st: TensorState, written: np.ndarray, touched: np.ndarray | bool
) -> None:
    bad = ~written & touched
    if np.any(bad):
        ev.fault("E0302", f"reduction into a never-written element of `{st.decl.name}`", bad)


def reduce_into(
    ev: Evaluator,
    target: Access,
    op: ReduceOp,
    value: Value,
    *,
    plan: tuple[tuple[Lin, ...], frozenset[int]] | None,
    summed: bool = False,
) -> None:
    """``target op= value`` over the evaluator's domain.

    Args:
        ev: the statement's evaluator.
        target: the reduced-into access.
        op: ``+ * max min``.
        value: per-point values (or, with ``summed``, contributions already reduced
            over the axes not in the target, as `run_contraction` returns them).
        plan: `target_axes` of the target, or ``None`` for element-wise updates.
        summed: ``value`` is already reduced; masked points contributed the identity.
    """
    st = ev.state(target)
    _check_writable(ev, st)
    mask = ev.domain.mask
    ufunc = REDUCE_UFUNCS[op]
    val = np.asarray(value)
    if val.dtype == np.bool_:
        val = val.astype(np.int64)
    if val.ndim < ev.domain.ndim:
        val = val.reshape(val.shape + (1,) * (ev.domain.ndim - val.ndim))
    if plan is None:
        _reduce_scatter(ev, st, target, ufunc, val)
        return
    forms, axes = plan
    reduced = tuple(k for k, n in enumerate(ev.domain.shape) if n > 1 and k not in axes)
    if not summed and reduced:
        val = _reduce_axes(ufunc, op, val, mask, reduced, ev.domain.shape)
    # Reduced contributions hold the identity where no point was active, and
    # combining with the identity changes nothing; unreduced values need the mask.
    where: np.ndarray | bool = mask if (mask is not None and not reduced) else True
    view = affine_view(st.data, forms, ev.domain)
    written = st.written
    if written is not None:
        touched: np.ndarray | bool = True
        if mask is not None:
            touched = np.any(mask, axis=reduced, keepdims=True) if reduced else mask
        _check_target_written(ev, st, affine_view(written, forms, ev.domain), touched)
    _combine(view, ufunc, val, st.decl.dtype, where)
    st.mark_changed()


def _reduce_axes(
    ufunc: np.ufunc,
    op: ReduceOp,
    val: np.ndarray,
    mask: np.ndarray | None,
    reduced: tuple[int, ...],
    extents: tuple[int, ...],
) -> np.ndarray:
    """Reduce ``val`` over the ``reduced`` domain axes (masked points excluded).

    A value that does not vary along a reduced axis still counts once per point
    (``s[] += 1.0`` over ``j`` adds the trip count). Short windows loop over their
    positions with whole-block in-place ufunc calls; long ones use ``ufunc.reduce``.
    """
    shape = list(broadcast_shape(val.shape, mask.shape if mask is not None else ()))
    window = math.prod(extents[k] for k in reduced)
    identity = reduce_identity(op, val.dtype)
    if window <= SMALL_REDUCTION:
        kept = [1 if k in reduced else n for k, n in enumerate(shape)]
        acc = np.full(kept, identity, dtype=val.dtype)
        positions = list(np.ndindex(*(extents[k] for k in reduced)))

        def run(todo: list[tuple[slice, ...]]) -> None:
            for blk in todo:  # Note [Cache blocking]: the block stays in cache
                acc_b = acc[blk] if acc.ndim else acc[...]
                for pos in positions:
                    at = dict(zip(reduced, pos, strict=True))
                    vi = _window_index(val.shape, blk, at)
                    where = True if mask is None else mask[_window_index(mask.shape, blk, at)]
                    ufunc(acc_b, val[vi], out=acc_b, where=where)

        parallel.run_blocks(run, list(blocks(kept)), acc.size)
        return acc
    if mask is None and all(val.shape[k] == extents[k] for k in reduced):
        if op == "+" and val.dtype.kind == "f" and _trailing_contiguous(val, reduced):
            # BLAS matrix-vector product with ones: 3x faster than a pairwise sum
            rows = math.prod(val.shape[: reduced[0]])
            total = val.reshape(rows, window) @ np.ones(window, dtype=val.dtype)
            return total.reshape(kept_shape(val.shape, reduced))
        summed: np.ndarray = ufunc.reduce(val, axis=reduced, keepdims=True)
        return summed
    for k in reduced:
        shape[k] = extents[k]
    full = tuple(shape)
    masked: np.ndarray = ufunc.reduce(
        np.broadcast_to(val, full),
        axis=reduced,
        keepdims=True,
        where=True if mask is None else np.broadcast_to(mask, full),
        initial=identity,
    )
    return masked


def kept_shape(shape: tuple[int, ...], reduced: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` with the ``reduced`` axes set to extent 1."""
    return tuple(1 if k in reduced else n for k, n in enumerate(shape))


def _trailing_contiguous(val: np.ndarray, reduced: tuple[int, ...]) -> bool:
    """True when ``reduced`` are the last axes of ``val`` and lie contiguously in memory
    after the other axes (so ``val`` is a stack of contiguous rows)."""
    n = val.ndim
    if reduced != tuple(range(n - len(reduced), n)) or not val.flags.c_contiguous:
        return False
    return val.ndim > 1 and math.prod(val.shape[: reduced[0]]) > 1


def _window_index(
    shape: tuple[int, ...], blk: tuple[slice, ...], at: dict[int, int]
) -> tuple[slice, ...]:
    """Index of one window position (``at``) within one output block, for an array that
    may have extent 1 (broadcast) on any axis."""
    out = []
    for k, n in enumerate(shape):
        if n == 1:
            out.append(slice(None))
        elif k in at:
            out.append(slice(at[k], at[k] + 1))
        else:
            out.append(blk[k])
    return tuple(out)


def _combine(
    view: np.ndarray, ufunc: np.ufunc, val: np.ndarray, dtype: DType, touched: np.ndarray | bool
) -> None:
    if val.dtype.kind != view.dtype.kind and not (
        val.dtype.kind in "iu" and view.dtype.kind == "f"
    ):
        val = round_to_dtype(val, dtype)
    if exact_dtype(dtype) and touched is True:
        ufunc(view, _like(val, view), out=view, casting="unsafe")
        return
    new = round_to_dtype(ufunc(view, val), dtype)
    np.copyto(view, new, where=touched, casting="unsafe")


def _like(val: np.ndarray, view: np.ndarray) -> np.ndarray:
    """``val``, copied into ``view``'s memory order when both are large and their axis
    orders differ: a blocked transposing copy, then an update that walks ``view`` and
    ``val`` alike, beats an update striding across one of them (a contraction result
    ordered ``(..., channel)`` into an NCHW target)."""
    if val.shape != view.shape or val.size < (1 << 16):
        return val

    def order(a: np.ndarray) -> list[int]:
        return sorted(range(a.ndim), key=lambda k: (-abs(a.strides[k]), k))

    want = order(view)
    if [k for k in order(val) if val.shape[k] > 1] == [k for k in want if val.shape[k] > 1]:
        return val
    return np.ascontiguousarray(val.transpose(want)).transpose(np.argsort(want))


def _reduce_scatter(
    ev: Evaluator, st: TensorState, target: Access, ufunc: np.ufunc, val: np.ndarray
) -> None:
    index, vals = _scatter_points(ev, target, val, all_axes=True)
    written = st.written
    if written is not None and not np.all(written[index]):
        ev.fault("E0302", f"reduction into a never-written element of `{st.decl.name}`")
    vals = (
        vals.astype(st.data.dtype, copy=False)
        if vals.dtype.kind == st.data.dtype.kind
        else round_to_dtype(vals, st.decl.dtype)
    )
    ufunc.at(st.data, index, vals)
    if not exact_dtype(st.decl.dtype):
        st.data[index] = round_to_dtype(st.data[index], st.decl.dtype)
    st.mark_changed()
