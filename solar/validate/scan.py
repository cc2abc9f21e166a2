"""First-order recurrences in ``seq`` loops, run as numpy scans (``ufunc.accumulate``).

Contract: `match_scan` recognises a ``seq`` loop whose body is a single assignment,
possibly nested in plain loops with ``t``-independent bounds, of the form::

    seq for t in lo .. hi step s {
      for ... { T[f(t)] = T[f(t - s)] op E }        # op: + * max(,) min(,)
    }

where ``E`` does not read ``T``, and the carried form the PyTorch scans lower to
(ops_scan.py: a kernel-local running value per row, stored every step)::

    seq for t in lo .. hi step s {
      for ... { C[g] = C[g] op E
                Y[f(t)] = C[g] }                     # g does not depend on t
    }

where ``E`` reads neither ``C`` nor ``Y``: ``Y[f(t)]`` takes the running values and
``C`` ends with the last one. Every iteration then computes
``T[f(t)] = T[f(lo - s)] op E(lo) op ... op E(t)``, so the loop is equivalent to one
accumulate along the ``t`` axis (``np.cumsum`` for ``+``). `run_scan` executes it that
way (`accumulate`) when the stored values need no rounding (f32, f64, i64 targets);
for ``+`` and ``*`` the result then differs from the iteration-by-iteration run only
in rounding order, as for every reduction of the executor. A narrow target (bf16 ...)
is rounded after every step, which a scan cannot mimic: `run_scan` returns ``False``
and the caller iterates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solar.ir import Access, Assign, Binary, Call, Expr, For, ReduceOp, linear_form
from solar.validate import parallel
from solar.validate.affine import free_names, reads_tensor
from solar.validate.evaluate import Evaluator, ExecCache
from solar.validate.grids import Axis, Domain
from solar.validate.state import TensorState
from solar.validate.writes import REDUCE_UFUNCS, exact_dtype, store

__all__ = ["ScanMatch", "accumulate", "match_scan", "run_scan"]


@dataclass(frozen=True, slots=True)
class ScanMatch:
    """A recognised recurrence: ``stmt`` is ``T[f(t)] = prev op other`` inside ``inner``."""

    stmt: Assign
    op: ReduceOp
    prev: Access
    other: Expr
    inner: tuple[For, ...]
    copy: Assign | None = None
    """The carried form's ``Y[f(t)] = C[g]`` (``stmt`` is then ``C[g] = C[g] op E``)."""


def _split(value: Expr) -> tuple[ReduceOp, Expr, Expr] | None:
    match value:
        case Binary(op="+" | "*" as op, lhs=a, rhs=b):
            return op, a, b
        case Call(func="max" | "min" as f, args=(a, b)):
            return f, a, b
        case _:
            return None


def match_scan(loop: For, sizes: dict[str, int]) -> ScanMatch | None:
    """Recognise a scan (see module docstring); ``None`` when the loop is not one."""
    if not loop.seq:
        return None
    inner: list[For] = []
    body = loop.body
    while len(body) == 1 and isinstance(body[0], For) and not body[0].seq:
        nested = body[0]
        if loop.var in free_names(nested.lo) | free_names(nested.hi):
            return None
        if reads_tensor(nested.lo) or reads_tensor(nested.hi):
            return None
        inner.append(nested)
        body = nested.body
    if len(body) == 2:
        return _match_carry(loop, body, tuple(inner), sizes)
    if len(body) != 1 or not isinstance(body[0], Assign):
        return None
    stmt = body[0]
    parts = _split(stmt.value)
    if parts is None:
        return None
    op, a, b = parts
    target = stmt.target
    for prev, other in ((a, b), (b, a)):
        if not isinstance(prev, Access) or prev.tensor != target.tensor:
            continue
        if reads_tensor(other, target.tensor) or _shifted(target, prev, loop, sizes) is False:
            continue
        if any(reads_tensor(i, target.tensor) for i in target.indices):
            continue
        return ScanMatch(stmt, op, prev, other, tuple(inner))
    return None


def _match_carry(
    loop: For, body: tuple[object, ...], inner: tuple[For, ...], sizes: dict[str, int]
) -> ScanMatch | None:
    """The carried form (module docstring): ``C[g] = C[g] op E; Y[f(t)] = C[g]``."""
    update, copy = body
    if not isinstance(update, Assign) or not isinstance(copy, Assign):
        return None
    parts = _split(update.value)
    carry, out = update.target, copy.target
    if parts is None or copy.value != carry or out.tensor == carry.tensor:
        return None
    if any(loop.var in free_names(i) or reads_tensor(i) for i in carry.indices):
        return None
    if any(reads_tensor(i) for i in out.indices):
        return None
    forms = [linear_form(i, sizes) for i in out.indices]
    if any(f is None for f in forms) or not any(f.coef(loop.var) for f in forms if f):
        return None  # every step must store a different element
    op, a, b = parts
    for prev, other in ((a, b), (b, a)):
        if prev != carry or reads_tensor(other, carry.tensor) or reads_tensor(other, out.tensor):
            continue
        assert isinstance(prev, Access)
        return ScanMatch(update, op, prev, other, inner, copy)
    return None


def _shifted(target: Access, prev: Access, loop: For, sizes: dict[str, int]) -> bool:
    """True when ``prev`` is ``target`` one iteration back (``t -> t - step``)."""
    moved = False
    for t_idx, p_idx in zip(target.indices, prev.indices, strict=True):
        ft, fp = linear_form(t_idx, sizes), linear_form(p_idx, sizes)
        if ft is None or fp is None:
            return False
        coef = ft.coef(loop.var)
        if ft.coefs != fp.coefs:
            return False
        if ft.const - fp.const != coef * loop.step:
            return False
        moved = moved or coef != 0
    return moved


def run_scan(
    match: ScanMatch,
    loop: For,
    domain: Domain,
    lo: int,
    hi: int,
    axis_of: dict[int, int],
    tensors: dict[str, TensorState],
    sizes: dict[str, int],
    cache: ExecCache,
) -> bool:
    """Run a recognised scan over ``lo .. hi``; ``False`` when it must iterate instead."""
    st = tensors.get(match.stmt.target.tensor)
    if st is None or not exact_dtype(st.decl.dtype):
        return False
    count = max(0, -(-(hi - lo) // loop.step))
    if count == 0:
        return True
    t_axis = axis_of[id(loop)]
    full = domain.with_axis(Axis(loop.var, t_axis, lo, loop.step, count))
    before = domain.with_scalar(loop.var, lo)  # `prev` at t = lo is the element before
    for nested in match.inner:
        ev = Evaluator(tensors, sizes, full, match.stmt, cache)
        n_lo, n_hi = ev.eval(nested.lo, full.mask), ev.eval(nested.hi, full.mask)
        if np.ndim(n_lo) or np.ndim(n_hi):
            return False
        n_count = max(0, -(-(int(n_hi) - int(n_lo)) // nested.step))
        if n_count == 0:
            return True
        ax = Axis(nested.var, axis_of[id(nested)], int(n_lo), nested.step, n_count)
        full, before = full.with_axis(ax), before.with_axis(ax)
    ev_full = Evaluator(tensors, sizes, full, match.stmt, cache)
    other = np.asarray(ev_full.eval(match.other, full.mask))
    ev_before = Evaluator(tensors, sizes, before, match.stmt, cache)
    start = np.asarray(ev_before.read(match.prev, before.mask))
    other = np.broadcast_to(other, np.broadcast_shapes(other.shape, full.shape))
    ufunc = REDUCE_UFUNCS[match.op]
    values = ufunc(start, accumulate(ufunc, other, t_axis))
    if match.copy is None:
        store(ev_full, match.stmt.target, values)
        return True
    store(ev_full, match.copy.target, values)
    last = before.with_scalar(loop.var, lo + (count - 1) * loop.step)
    ev_last = Evaluator(tensors, sizes, last, match.stmt, cache)
    store(ev_last, match.stmt.target, np.take(values, [count - 1], axis=t_axis))
    return True


def accumulate(ufunc: np.ufunc, arr: np.ndarray, axis: int) -> np.ndarray:
    """``ufunc.accumulate(arr, axis)``, blocked so that long scans vectorise.

    numpy's accumulate is a scalar loop along ``axis`` (about 3 ns per element). For
    long axes, the axis is cut into blocks of about ``sqrt(n)`` elements: a Python loop
    over block positions combines whole vectors (one element of every block and every
    row at once), then each block adds the running total of the blocks before it. For
    ``+`` and ``*`` this changes the rounding order (like every reduction of the
    executor); ``max``/``min`` are exact.

    >>> x = np.arange(1.0, 11.0)
    >>> accumulate(np.add, x, 0).tolist() == np.cumsum(x).tolist()
    True
    """
    n = arr.shape[axis]
    if n < _BLOCKED_MIN_AXIS or arr.size < _BLOCKED_MIN_SIZE:
        return ufunc.accumulate(arr, axis=axis)
    block = math.isqrt(n)
    nblocks = -(-n // block)
    moved = np.moveaxis(arr, axis, -1)
    lead = moved.shape[:-1]
    rows = moved.reshape(-1, n)
    # layout (position in block, row, block): one step combines one contiguous slab
    cols = np.empty((block, rows.shape[0], nblocks), dtype=arr.dtype)
    view = cols.transpose(1, 2, 0)  # (row, block, position)
    full = n // block
    view[:, :full, :] = rows[:, : full * block].reshape(-1, full, block)
    if full < nblocks:
        tail = n - full * block
        view[:, full, :tail] = rows[:, full * block :]
        view[:, full, tail:] = ufunc.identity if ufunc.identity is not None else 0

    def run(row_ranges: list[tuple[int, int]]) -> None:
        for lo, hi in row_ranges:
            part = cols[:, lo:hi]
            for k in range(1, block):
                ufunc(part[k - 1], part[k], out=part[k])
            totals = ufunc.accumulate(part[-1, :, :-1], axis=-1)
            ufunc(part[:, :, 1:], totals[None, :, :], out=part[:, :, 1:])

    parallel.run_blocks(run, parallel.split_evenly(rows.shape[0], parallel.WORKERS), cols.size)
    result = view.reshape(rows.shape[0], nblocks * block)[:, :n].reshape(*lead, n)
    return np.moveaxis(result, -1, axis)


_BLOCKED_MIN_AXIS = 256
_BLOCKED_MIN_SIZE = 1 << 15
