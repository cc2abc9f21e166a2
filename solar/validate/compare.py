"""Comparing executed outputs with reference outputs, and the tolerance policy.

Contract: `compare_outputs` checks, per output, presence, then shape, then dtype kind,
then values (``|got - expected| <= atol + rtol * |expected|``, NaN matching NaN,
infinities matching exactly) and describes the worst mismatch in words an LLM repair
loop can act on. `output_tolerances` applies the policy of docs/validation.md:

* the tolerance of an output depends on the least precise floating dtype the output
  depends on (its own dtype, every tensor it is computed from, every cast on the way)
  and on the longest reduction or scan feeding it (the product of the reduced loop
  extents; for a recurrence in ``seq`` loops, their trip counts: Note [Scan length]);
* ``rtol = base_rtol(dtype) * sqrt(reduction length)`` (capped at 0.5): rounding
  errors of a sum of ``L`` terms grow like ``sqrt(L)`` for random-sign data;
* ``atol = max(base_atol(dtype), rtol * rms(expected))``: an element near zero that is
  the cancellation of large terms inherits an error of the order of the terms;
* integer and bool outputs must match exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from solar.ir import Access, Assign, Cast, DType, For, If, Program, Reduce, Stmt, walk_exprs
from solar.validate.affine import free_names, int_range

__all__ = [
    "BASE_TOLERANCES",
    "OutputComparison",
    "Tolerance",
    "compare_outputs",
    "output_tolerances",
    "tolerance_for",
]


@dataclass(frozen=True, slots=True)
class Tolerance:
    """``|got - expected| <= atol + rtol * |expected|`` passes."""

    rtol: float
    atol: float

    def __str__(self) -> str:
        return f"rtol={self.rtol:.1e}, atol={self.atol:.1e}"


BASE_TOLERANCES: dict[DType, Tolerance] = {
    DType.F64: Tolerance(1e-9, 1e-12),
    DType.F32: Tolerance(1e-5, 1e-6),
    DType.F16: Tolerance(2e-3, 1e-4),
    DType.BF16: Tolerance(1.6e-2, 1e-3),
    DType.F8E4M3: Tolerance(1.25e-1, 1e-2),
    DType.F8E5M2: Tolerance(2.5e-1, 2e-2),
}
"""Base tolerance per floating dtype: a few units in the last place of its mantissa."""

_MANTISSA_BITS = {
    DType.F64: 52,
    DType.F32: 23,
    DType.F16: 10,
    DType.BF16: 7,
    DType.F8E4M3: 3,
    DType.F8E5M2: 2,
}
_MAX_RTOL = 0.5

Status = Literal["ok", "mismatch", "missing", "shape", "dtype"]


def tolerance_for(dtype: DType, reduction_length: int = 1, *, scale: float = 0.0) -> Tolerance:
    """The policy tolerance for values of ``dtype`` fed by a reduction of that length.

    Args:
        dtype: the least precise dtype the value depends on.
        reduction_length: terms in the longest reduction feeding the value.
        scale: the typical magnitude (RMS) of the expected values.

    >>> tolerance_for(DType.F32, 1024)
    Tolerance(rtol=0.00032, atol=1e-06)
    >>> tolerance_for(DType.I32)
    Tolerance(rtol=0.0, atol=0.0)
    """
    base = BASE_TOLERANCES.get(dtype)
    if base is None:
        return Tolerance(0.0, 0.0)
    rtol = min(_MAX_RTOL, base.rtol * math.sqrt(max(1, reduction_length)))
    return Tolerance(rtol, max(base.atol, rtol * scale))


@dataclass(frozen=True, slots=True)
class OutputComparison:
    """The comparison of one output.

    Attributes:
        name: the output.
        status: ``ok``, ``mismatch`` (values), ``missing``, ``shape`` or ``dtype``.
        tolerance: the tolerance applied.
        max_abs_error: largest ``|got - expected|`` over compared finite elements.
        max_rel_error: largest ``|got - expected| / |expected|`` (expected != 0).
        checked: number of elements compared.
        total: number of elements of the output.
        mismatches: number of elements outside the tolerance.
        description: one human-readable line (empty when ``ok``).
    """

    name: str
    status: Status
    tolerance: Tolerance
    max_abs_error: float
    max_rel_error: float
    checked: int
    total: int
    mismatches: int
    description: str

    @property
    def ok(self) -> bool:
        """True when the output matched."""
        return self.status == "ok"


def _fmt(x: float) -> str:
    return f"{x:.7g}"


def _kind(dtype: np.dtype[np.generic]) -> str:
    if dtype.kind == "b":
        return "bool"
    if dtype.kind in "iu":
        return "int"
    return "float"


_COMPARE_BLOCK = 1 << 20
"""Elements compared at a time (bounds the float64 temporaries to a few tens of MB)."""


def _compare_one(
    name: str, expected: np.ndarray, got: np.ndarray, tol: Tolerance, mask: np.ndarray | None
) -> OutputComparison:
    total = int(expected.size)
    if got.shape != expected.shape:
        msg = f"output `{name}` has shape {got.shape}, expected {expected.shape}"
        return OutputComparison(name, "shape", tol, math.inf, math.inf, 0, total, total, msg)
    if _kind(got.dtype) != _kind(expected.dtype) and not (
        _kind(got.dtype) == "float" or _kind(expected.dtype) == "float"
    ):
        msg = f"output `{name}` has dtype {got.dtype}, expected {expected.dtype}"
        return OutputComparison(name, "dtype", tol, math.inf, math.inf, 0, total, total, msg)
    # In blocks of `_COMPARE_BLOCK` elements: the float64 temporaries of a whole 67 MB
    # output took 0.8 GB of peak memory (issue: Speed).
    exp_flat, act_flat = expected.reshape(-1), got.reshape(-1)
    sel_flat = None if mask is None else np.broadcast_to(mask, expected.shape).reshape(-1)
    checked = total if sel_flat is None else int(sel_flat.sum())
    max_abs = max_rel = 0.0
    n_bad = 0
    worst_flat, worst_score = 0, -math.inf
    first: list[int] = []
    for lo in range(0, total, _COMPARE_BLOCK):
        hi = min(total, lo + _COMPARE_BLOCK)
        exp = exp_flat[lo:hi].astype(np.float64)
        act = act_flat[lo:hi].astype(np.float64)
        sel = True if sel_flat is None else sel_flat[lo:hi]
        with np.errstate(all="ignore"):
            diff = np.abs(act - exp)
            finite = np.isfinite(exp) & np.isfinite(act)
            bad_finite = finite & (diff > tol.atol + tol.rtol * np.abs(exp))
            same_special = (np.isnan(exp) & np.isnan(act)) | (
                np.isinf(exp) & np.isinf(act) & (np.sign(exp) == np.sign(act))
            )
            bad = sel & (bad_finite | (~finite & ~same_special))
            abs_err = np.where(sel & finite, diff, 0.0)
            rel_err = np.where(
                sel & finite & (exp != 0), diff / np.abs(np.where(exp == 0, 1, exp)), 0.0
            )
        if abs_err.size:
            max_abs, max_rel = (
                max(max_abs, float(abs_err.max())),
                max(max_rel, float(rel_err.max())),
            )
        block_bad = int(bad.sum())
        if block_bad == 0:
            continue
        n_bad += block_bad
        score = np.where(bad, np.where(np.isfinite(diff), diff, np.inf), -1.0)
        k = int(np.argmax(score))
        if score[k] > worst_score:
            worst_flat, worst_score = lo + k, float(score[k])
        first += [lo + int(i) for i in np.flatnonzero(bad)[: 3 - len(first)]]
    if n_bad == 0:
        return OutputComparison(name, "ok", tol, max_abs, max_rel, checked, total, 0, "")
    worst = np.unravel_index(worst_flat, expected.shape)
    where = ", ".join(str([int(i) for i in np.unravel_index(f, expected.shape)]) for f in first)
    msg = (
        f"output `{name}` {tuple(expected.shape)}: {n_bad} of {checked} checked elements "
        f"differ beyond {tol}; worst at index {[int(i) for i in worst]}: expected "
        f"{_fmt(np.float64(expected[worst]))}, got {_fmt(np.float64(got[worst]))}; first "
        f"mismatches at {where}; max abs error {max_abs:.3g}, max rel error {max_rel:.3g}"
    )
    return OutputComparison(name, "mismatch", tol, max_abs, max_rel, checked, total, n_bad, msg)


def compare_outputs(
    expected: Mapping[str, np.ndarray],
    got: Mapping[str, np.ndarray],
    tolerances: Mapping[str, Tolerance] | Tolerance,
    *,
    masks: Mapping[str, np.ndarray | None] | None = None,
) -> tuple[OutputComparison, ...]:
    """Compare every expected output with the executed one.

    Args:
        expected: reference outputs by name.
        got: executed outputs by name.
        tolerances: one tolerance for all outputs, or one per output name.
        masks: per output, the elements to compare (``None``: all), for sampled runs.

    Returns:
        One `OutputComparison` per expected output, in name order.

    >>> a = {"Y": np.array([1.0, 2.0])}
    >>> [c.status for c in compare_outputs(a, {"Y": np.array([1.0, 2.5])}, Tolerance(1e-3, 0))]
    ['mismatch']
    """
    out: list[OutputComparison] = []
    for name in sorted(expected):
        tol = (
            tolerances
            if isinstance(tolerances, Tolerance)
            else tolerances.get(name, Tolerance(0, 0))
        )
        exp = np.asarray(expected[name])
        if name not in got:
            msg = f"output `{name}` was not produced"
            out.append(
                OutputComparison(
                    name, "missing", tol, math.inf, math.inf, 0, exp.size, exp.size, msg
                )
            )
            continue
        mask = None if masks is None else masks.get(name)
        out.append(_compare_one(name, exp, np.asarray(got[name]), tol, mask))
    return tuple(out)


# ---- policy: reduction lengths and precisions per output ---------------------------


def _leaves(
    body: tuple[Stmt, ...],
    sizes: Mapping[str, int],
    ranges: dict[str, tuple[int, int]],
    trips: dict[str, int],
) -> list[tuple[Assign | Reduce, dict[str, int]]]:
    out: list[tuple[Assign | Reduce, dict[str, int]]] = []
    for s in body:
        if isinstance(s, Assign | Reduce):
            out.append((s, trips))
        elif isinstance(s, If):
            out += _leaves(s.body, sizes, ranges, trips)
        elif isinstance(s, For):
            lo, hi = int_range(s.lo, sizes, ranges), int_range(s.hi, sizes, ranges)
            if lo is None or hi is None:
                count = 1
                inner = ranges
            else:
                count = max(1, -(-(hi[1] - lo[0]) // s.step))
                inner = {**ranges, s.var: (lo[0], max(lo[0], hi[1] - 1))}
            key = f"{_SEQ}{s.var}" if s.seq else s.var
            out += _leaves(s.body, sizes, inner, {**trips, key: count})
    return out


_SEQ = "seq "
"""Prefix of a `seq` loop's key in the trip-count maps of `_leaves` (never a valid name)."""


def _recurrence_length(stmt: Assign, trips: Mapping[str, int]) -> int:
    """Note [Scan length]: the steps a recurrence ``T[..] = f(T[..], ...)`` chains.

    An assignment inside ``seq`` loops that reads its own target carries a value
    from one iteration to the next (a scan: ``carry[i] = carry[i] + x[i, t]``): its
    rounding errors accumulate over the iterations of those loops like the terms of a
    reduction of that length, so its length is the product of their trip counts.
    """
    if not any(k.startswith(_SEQ) for k in trips):
        return 1
    target = stmt.target.tensor
    if not any(isinstance(e, Access) and e.tensor == target for e in walk_exprs(stmt.value)):
        return 1
    return math.prod(c for k, c in trips.items() if k.startswith(_SEQ))


def _least_precise(a: DType, b: DType) -> DType:
    if a not in _MANTISSA_BITS:
        return b
    if b not in _MANTISSA_BITS:
        return a
    return a if _MANTISSA_BITS[a] <= _MANTISSA_BITS[b] else b


def _dependencies(
    program: Program, sizes: Mapping[str, int]
) -> tuple[dict[str, int], dict[str, DType]]:
    """Longest reduction and least precise dtype feeding each tensor (fixpoint)."""
    length: dict[str, int] = {}
    precision: dict[str, DType] = {d.name: d.dtype for d in program.tensors}
    deps: dict[str, set[str]] = {}
    for kernel in program.kernels:
        precision.update({d.name: d.dtype for d in kernel.locals})
        for stmt, trips in _leaves(kernel.body, sizes, {}, {}):
            target = stmt.target.tensor
            deps.setdefault(target, set()).update(
                e.tensor for e in walk_exprs(stmt.value) if isinstance(e, Access)
            )
            for e in walk_exprs(stmt.value):
                if isinstance(e, Cast) and e.dtype.is_float:
                    precision[target] = _least_precise(precision.get(target, e.dtype), e.dtype)
            if isinstance(stmt, Reduce):
                used = {v for i in stmt.target.indices for v in free_names(i)}
                n = math.prod(c for v, c in trips.items() if v.removeprefix(_SEQ) not in used)
                length[target] = max(length.get(target, 1), n)
            else:
                length[target] = max(length.get(target, 1), _recurrence_length(stmt, trips))
    for _ in range(len(deps) + 1):
        changed = False
        for target, reads in deps.items():
            for r in reads:
                n = max(length.get(target, 1), length.get(r, 1))
                p = _least_precise(precision.get(target, DType.F64), precision.get(r, DType.F64))
                if n != length.get(target, 1) or p != precision.get(target):
                    length[target], precision[target], changed = n, p, True
        if not changed:
            break
    return length, precision


def _rms(values: np.ndarray) -> float:
    arr = np.asarray(values, dtype=np.float64)
    finite = arr[np.isfinite(arr)]
    return float(np.sqrt(np.mean(finite * finite))) if finite.size else 0.0


def output_tolerances(
    program: Program,
    sizes: Mapping[str, int],
    expected: Mapping[str, np.ndarray] | None = None,
) -> dict[str, Tolerance]:
    """The policy tolerance of every output of ``program`` at resolved ``sizes``.

    Args:
        program: the program.
        sizes: a resolved size binding (every size, derived ones included).
        expected: reference outputs, whose RMS scales ``atol`` (module docstring).

    Returns:
        Output name -> tolerance.
    """
    length, precision = _dependencies(program, sizes)
    out: dict[str, Tolerance] = {}
    for decl in program.tensors_with_role("output"):
        if not decl.dtype.is_float:
            out[decl.name] = Tolerance(0.0, 0.0)
            continue
        scale = _rms(expected[decl.name]) if expected and decl.name in expected else 0.0
        out[decl.name] = tolerance_for(
            precision.get(decl.name, decl.dtype), length.get(decl.name, 1), scale=scale
        )
    return out
