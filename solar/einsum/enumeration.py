"""Numeric evaluation of deferred counts: vectorised enumeration of a cluster.

Contract: ``(loops, guards[, subscripts], sizes) -> (count, exact)``. The outer
loops of a cluster are enumerated with numpy (guards applied as soon as their
variables are bound); the innermost variable is counted in closed form per outer
point when its guards are linear in it: an interval of points, or an arithmetic
progression of subscript values whose union per key is measured by a sort and
sweep. Past ``limit`` points the enumeration stops and ``exact`` is False: the
count of a subset is a lower bound of the count (never more).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from solar.einsum.domain import LoopDim, expr_vars
from solar.ir import Binary, BoolLit, Call, Expr, IntLit, Name, Unary, print_expr

__all__ = ["ENUMERATION_LIMIT", "count_image_numeric", "count_points_numeric"]

ENUMERATION_LIMIT = 2_000_000
"""Most outer points a deferred count enumerates before it returns a lower bound."""

_INT = np.int64


def _veval(expr: Expr, env: Mapping[str, Any]) -> Any:
    """Evaluate an integer/boolean IR expression over numpy arrays (floor semantics)."""
    match expr:
        case IntLit(value=v):
            return v
        case BoolLit(value=v):
            return v
        case Name(name=n):
            return env[n]
        case Unary(op="-", operand=o):
            return -_veval(o, env)
        case Unary(op="not", operand=o):
            return np.logical_not(_veval(o, env))
        case Binary(op=op, lhs=a, rhs=b):
            x, y = _veval(a, env), _veval(b, env)
            return _BINARY[op](x, y)
        case Call(func="min", args=(a, b)):
            return np.minimum(_veval(a, env), _veval(b, env))
        case Call(func="max", args=(a, b)):
            return np.maximum(_veval(a, env), _veval(b, env))
        case _:
            raise ValueError(f"not an integer expression: {print_expr(expr)}")


_BINARY = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "//": np.floor_divide,
    "%": np.mod,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
    "and": np.logical_and,
    "or": np.logical_or,
}


def _arr(value: Any, n: int) -> np.ndarray:
    out = np.asarray(value)
    if out.ndim == 0:
        return np.full(n, out, dtype=out.dtype if out.dtype == bool else _INT)
    return out


def _enumerate(
    loops: Sequence[LoopDim], guards: Sequence[Expr], env: Mapping[str, int], limit: int
) -> tuple[dict[str, np.ndarray], int, bool]:
    """All guarded points of the loops (at most ``limit``; ``exact`` False if cut)."""
    cols: dict[str, np.ndarray] = {}
    n, exact = 1, True
    bound: set[str] = set()
    all_vars = [lp.var for lp in loops]
    pending = [(g, expr_vars(g, all_vars)) for g in guards]
    for lp in loops:
        scope = {**env, **cols}
        lo = _arr(_veval(lp.lo, scope), n).astype(_INT)
        hi = _arr(_veval(lp.hi, scope), n).astype(_INT)
        cnt = np.maximum(0, -((lo - hi) // lp.step))
        csum = np.cumsum(cnt)
        if n and csum[-1] > limit:
            exact = False
            keep = int(np.searchsorted(csum, limit, side="right"))
            if keep == 0:
                keep = 1
                cnt = np.array([limit], dtype=_INT)
            else:
                cnt = cnt[:keep]
            lo = lo[:keep]
            cols = {k: c[:keep] for k, c in cols.items()}
            csum = np.cumsum(cnt)
        total = int(csum[-1]) if n else 0
        rows = np.repeat(np.arange(len(cnt)), cnt)
        offs = np.arange(total, dtype=_INT) - np.repeat(csum - cnt, cnt)
        cols = {k: c[rows] for k, c in cols.items()}
        cols[lp.var] = lo[rows] + lp.step * offs
        n = total
        bound.add(lp.var)
        ready = [g for g, gv in pending if gv <= bound]
        pending = [(g, gv) for g, gv in pending if not gv <= bound]
        for g in ready:
            mask = _arr(_veval(g, {**env, **cols}), n).astype(bool)
            cols = {k: c[mask] for k, c in cols.items()}
            n = int(mask.sum())
    for g, _ in pending:  # guards of no variable
        if n and not bool(np.all(_veval(g, env))):
            cols = {k: c[:0] for k, c in cols.items()}
            n = 0
    return cols, n, exact


def _linear(expr: Expr, v: str) -> tuple[int, Expr] | None:
    """Write ``expr`` as ``a * v + rest`` with integer ``a`` (None if not linear in ``v``)."""
    if v not in expr_vars(expr, [v]):
        return 0, expr
    match expr:
        case Name():
            return 1, IntLit(0)
        case Unary(op="-", operand=o):
            r = _linear(o, v)
            return None if r is None else (-r[0], Unary("-", r[1]))
        case Binary(op="+" | "-" as op, lhs=a, rhs=b):
            ra, rb = _linear(a, v), _linear(b, v)
            if ra is None or rb is None:
                return None
            sign = 1 if op == "+" else -1
            return ra[0] + sign * rb[0], Binary(op, ra[1], rb[1])
        case Binary(op="*", lhs=a, rhs=b):
            for k, other in ((a, b), (b, a)):
                kv = _int_const(k)
                if kv is not None:
                    r = _linear(other, v)
                    return None if r is None else (kv * r[0], Binary("*", k, r[1]))
            return None
        case _:
            return None


def _int_const(e: Expr) -> int | None:
    if isinstance(e, IntLit):
        return e.value
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.operand, IntLit):
        return -e.operand.value
    return None


def _ineqs(g: Expr) -> list[Expr] | None:
    """A comparison guard as IR expressions meaning ``e >= 0``."""
    if not isinstance(g, Binary) or g.op not in ("<", "<=", ">", ">=", "=="):
        return None
    a, b, one = g.lhs, g.rhs, IntLit(1)
    match g.op:
        case "<":
            return [Binary("-", Binary("-", b, a), one)]
        case "<=":
            return [Binary("-", b, a)]
        case ">":
            return [Binary("-", Binary("-", a, b), one)]
        case ">=":
            return [Binary("-", a, b)]
        case _:
            return [Binary("-", b, a), Binary("-", a, b)]


def _inner_plan(
    loops: Sequence[LoopDim], guards: Sequence[Expr]
) -> tuple[list[Expr], list[tuple[int, Expr]]] | None:
    """Split guards into outer ones and linear constraints on the innermost variable."""
    inner = loops[-1].var
    vs = [lp.var for lp in loops]
    outer: list[Expr] = []
    lin: list[tuple[int, Expr]] = []
    for g in guards:
        if inner not in expr_vars(g, vs):
            outer.append(g)
            continue
        ineqs = _ineqs(g)
        if ineqs is None:
            return None
        for e in ineqs:
            r = _linear(e, inner)
            if r is None:
                return None
            lin.append(r)
    return outer, lin


def _inner_range(
    lp: LoopDim, lin: Sequence[tuple[int, Expr]], scope: Mapping[str, object], n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per outer point: the innermost variable is ``lo + step * t`` for t in [t0, t1)."""
    lo = _arr(_veval(lp.lo, scope), n).astype(_INT)
    hi = _arr(_veval(lp.hi, scope), n).astype(_INT)
    t0 = np.zeros(n, dtype=_INT)
    t1 = np.maximum(0, -((lo - hi) // lp.step))
    for a, rest in lin:
        big_a = a * lp.step
        big_b = a * lo + _arr(_veval(rest, scope), n).astype(_INT)
        if big_a > 0:
            t0 = np.maximum(t0, -(big_b // big_a))
        elif big_a < 0:
            t1 = np.minimum(t1, big_b // (-big_a) + 1)
        else:
            t1 = np.where(big_b >= 0, t1, t0)
    return lo, t0, np.maximum(t0, t1)


def count_points_numeric(
    loops: Sequence[LoopDim], guards: Sequence[Expr], env: Mapping[str, int], limit: int
) -> tuple[int, bool]:
    if not loops:
        _, n, exact = _enumerate((), guards, env, limit)
        return n, exact
    plan = _inner_plan(loops, guards)
    if plan is None:
        _, n, exact = _enumerate(loops, guards, env, limit)
        return n, exact
    outer_guards, lin = plan
    cols, n, exact = _enumerate(loops[:-1], outer_guards, env, limit)
    _, t0, t1 = _inner_range(loops[-1], lin, {**env, **cols}, n)
    return int((t1 - t0).sum()), exact


def _distinct_rows(columns: Sequence[np.ndarray]) -> int:
    if not columns or len(columns[0]) == 0:
        return 0 if columns and len(columns[0]) == 0 else 1
    lin = np.zeros(len(columns[0]), dtype=_INT)
    scale = 1
    for c in columns:
        lo, hi = int(c.min()), int(c.max())
        width = hi - lo + 1
        if scale * width >= 2**62:
            return int(np.unique(np.stack(columns, axis=1), axis=0).shape[0])
        lin = lin * width + (c - lo)
        scale *= width
    return int(np.unique(lin).size)


def count_image_numeric(
    loops: Sequence[LoopDim], guards: Sequence[Expr], dims: Sequence[Expr],
    env: Mapping[str, int], limit: int,
) -> tuple[int, bool]:
    vs = [lp.var for lp in loops]
    inner = vs[-1]
    with_inner = [d for d in dims if inner in expr_vars(d, vs)]
    plan = _inner_plan(loops, guards)
    lin_dim = _linear(with_inner[0], inner) if len(with_inner) == 1 else None
    if plan is None or len(with_inner) > 1 or (with_inner and (lin_dim is None or not lin_dim[0])):
        cols, n, exact = _enumerate(loops, guards, env, limit)
        scope = {**env, **cols}
        return _distinct_rows([_arr(_veval(d, scope), n) for d in dims]), exact
    outer_guards, lin = plan
    cols, n, exact = _enumerate(loops[:-1], outer_guards, env, limit)
    scope = {**env, **cols}
    lo, t0, t1 = _inner_range(loops[-1], lin, scope, n)
    keep = t1 > t0
    others = [_arr(_veval(d, scope), n)[keep] for d in dims if d not in with_inner]
    if lin_dim is None:
        return _distinct_rows(others) if int(keep.sum()) else 0, exact
    a, rest = lin_dim
    step = a * loops[-1].step
    base = (_arr(_veval(rest, scope), n) + a * lo)[keep]
    t0, t1 = t0[keep], t1[keep]
    if step < 0:
        start = base + step * (t1 - 1)
        step = -step
    else:
        start = base + step * t0
    length = t1 - t0
    residue = start % step
    u0 = (start - residue) // step
    u1 = u0 + length
    return _union_intervals([*others, residue], u0, u1), exact


def _union_intervals(keys: Sequence[np.ndarray], u0: np.ndarray, u1: np.ndarray) -> int:
    """Total length of the union of ``[u0, u1)`` intervals grouped by equal key rows."""
    if len(u0) == 0:
        return 0
    order = np.lexsort((u0, *reversed(list(keys)))) if keys else np.argsort(u0, kind="stable")
    u0, u1 = u0[order], u1[order]
    if keys:
        ks = np.stack([k[order] for k in keys], axis=1)
        new_group = np.ones(len(u0), dtype=bool)
        new_group[1:] = np.any(ks[1:] != ks[:-1], axis=1)
    else:
        new_group = np.zeros(len(u0), dtype=bool)
        new_group[0] = True
    gid = np.cumsum(new_group) - 1
    base = int(u0.min())
    width = int(u1.max()) - base + 1
    shifted_end = (u1 - base) + gid * width
    prev = np.maximum.accumulate(shifted_end)
    prev_end = np.empty_like(prev)
    prev_end[0] = -1
    prev_end[1:] = prev[:-1]
    prev_end = np.where(new_group, gid * width, prev_end)
    start = (u0 - base) + gid * width
    return int(np.maximum(0, shifted_end - np.maximum(start, prev_end)).sum())

