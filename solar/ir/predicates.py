"""Affine predicates over loop indices: the condition algebra of the mask pass.

Contract: pure functions over `solar.ir` expressions and `Lin` forms. A `Pred` is
``lin <= 0`` over the integers; a *conjunction* is a tuple of them (Note [Conjunctions]
in `solar.ir.masks`). A predicate can be moved between the loop variables of an access
and the dims of the tensor it reads (``_0``, ``_1``...: `to_dims`, `from_dims`), printed
back as an IR comparison (`pred_expr`), and checked for a non-empty reduction range
(`nonempty`). Anything not affine gives None: the caller then leaves the work dense.
"""

from __future__ import annotations

from collections.abc import Mapping

from solar.ir.affine import Lin, linear_form
from solar.ir.nodes import Binary, BoolLit, Expr, For, IntLit, Name, Unary

__all__ = [
    "Pred",
    "all_from_dims",
    "all_to_dims",
    "compose",
    "conjunction",
    "conjunction_not",
    "from_dims",
    "negate",
    "nonempty",
    "pred_expr",
    "pred_of",
    "to_dims",
    "to_dims_partial",
]

Pred = Lin
"""An affine predicate ``lin <= 0``."""

def pred_of(e: Expr, loop_vars: frozenset[str]) -> Pred | None:
    """``e`` as ``lin <= 0`` when it is an affine comparison of indices."""
    if isinstance(e, Unary) and e.op == "not":
        p = pred_of(e.operand, loop_vars)
        return None if p is None else negate(p)
    if not isinstance(e, Binary) or e.op not in ("<=", "<", ">=", ">"):
        return None
    a, b = (linear_form(x, {}, loop_vars=loop_vars) for x in (e.lhs, e.rhs))
    if a is None or b is None:
        return None
    lhs, rhs = (a, b) if e.op in ("<=", "<") else (b, a)
    coefs = dict(lhs.coefs)
    for v, c in rhs.coefs:
        coefs[v] = coefs.get(v, 0) - c
    const = lhs.const - rhs.const + (1 if e.op in ("<", ">") else 0)
    return Lin.of(coefs, const)


def negate(p: Pred) -> Pred:
    """``not (L <= 0)`` is ``-L + 1 <= 0`` over the integers."""
    return Lin.of({v: -c for v, c in p.coefs}, 1 - p.const)


def conjunction(e: Expr, loop_vars: frozenset[str]) -> tuple[Pred, ...] | None:
    """``e`` as a conjunction of affine comparisons (Note [Conjunctions]), or None.

    ``true`` is the empty conjunction; ``a and b`` joins two; ``not (a or b)`` is
    ``not a and not b``; ``not (a and b)`` is a disjunction, so None.
    """
    match e:
        case BoolLit(value=True):
            return ()
        case Binary(op="and", lhs=a, rhs=b):
            ca, cb = conjunction(a, loop_vars), conjunction(b, loop_vars)
            return None if ca is None or cb is None else (*ca, *cb)
        case Unary(op="not", operand=Binary(op="or", lhs=a, rhs=b)):
            return conjunction(Binary("and", Unary("not", a), Unary("not", b)), loop_vars)
        case Unary(op="not", operand=Unary(op="not", operand=o)):
            return conjunction(o, loop_vars)
        case _:
            p = pred_of(e, loop_vars)
            return None if p is None else (p,)


def conjunction_not(e: Expr, loop_vars: frozenset[str]) -> tuple[Pred, ...] | None:
    """``not e`` as a conjunction of affine comparisons, or None."""
    return conjunction(Unary("not", e), loop_vars)


def all_from_dims(ps: tuple[Pred, ...], subscripts: tuple[Expr, ...],
                   loop_vars: frozenset[str]) -> tuple[Pred, ...] | None:
    out = tuple(from_dims(p, subscripts, loop_vars) for p in ps)
    return None if any(q is None for q in out) else out  # type: ignore[return-value]


def all_to_dims(ps: tuple[Pred, ...], subscripts: tuple[Expr, ...]) -> tuple[Pred, ...] | None:
    out = tuple(to_dims(p, subscripts) for p in ps)
    return None if any(q is None for q in out) else out  # type: ignore[return-value]


def pred_expr(p: Pred) -> Expr:
    """``positive terms <= negative terms - const`` as an IR comparison."""

    def term(v: str, c: int) -> Expr:
        return Name(v) if c == 1 else Binary("*", IntLit(c), Name(v))

    def total(terms: list[Expr], const: int) -> Expr:
        out: Expr | None = None
        for t in terms:
            out = t if out is None else Binary("+", out, t)
        if out is None:
            return IntLit(const)
        return out if const == 0 else Binary("+", out, IntLit(const))

    pos = [term(v, c) for v, c in p.coefs if c > 0]
    neg = [term(v, -c) for v, c in p.coefs if c < 0]
    lhs_const = p.const if p.const > 0 else 0
    rhs_const = -p.const if p.const < 0 else 0
    if lhs_const > 0:  # a + c <= b is a + (c - 1) < b: ``i < j`` rather than ``i + 1 <= j``
        return Binary("<", total(pos, lhs_const - 1), total(neg, rhs_const))
    return Binary("<=", total(pos, lhs_const), total(neg, rhs_const))


def compose(p: Pred, subs: Mapping[str, Lin]) -> Pred | None:
    """Substitute affine forms for the variables of ``p``."""
    coefs: dict[str, int] = {}
    const = p.const
    for v, c in p.coefs:
        if v not in subs:
            return None
        for w, d in subs[v].coefs:
            coefs[w] = coefs.get(w, 0) + c * d
        const += c * subs[v].const
    return Lin.of(coefs, const)


def _dim(d: int) -> str:
    return f"_{d}"


def to_dims(p: Pred, subscripts: tuple[Expr, ...]) -> Pred | None:
    """A predicate over loop variables as one over a tensor's dims (plain subscripts)."""
    names = {s.name: _dim(d) for d, s in enumerate(subscripts) if isinstance(s, Name)}
    if len(names) != sum(isinstance(s, Name) for s in subscripts):
        return None
    return compose(p, {v: Lin(((names[v], 1),), 0) for v in names})


def from_dims(p: Pred, subscripts: tuple[Expr, ...], loop_vars: frozenset[str]) -> Pred | None:
    """A predicate over a tensor's dims at the subscripts of an access."""
    subs: dict[str, Lin] = {}
    for d, s in enumerate(subscripts):
        lin = linear_form(s, {}, loop_vars=loop_vars)
        if lin is not None:
            subs[_dim(d)] = lin
    return compose(p, subs)


def to_dims_partial(p: Pred, subscripts: tuple[Expr, ...]) -> Pred | None:
    names: dict[str, str] = {}
    for d, s in enumerate(subscripts):
        if isinstance(s, Name):
            if s.name in names:
                return None
            names[s.name] = _dim(d)
    return compose(p, {v: Lin(((names[v], 1),), 0) for v in names})


def nonempty(ps: tuple[Pred, ...], loops: tuple[For, ...], reduced: frozenset[str]) -> bool:
    """Every outer point of ``loops`` keeps at least one reduction point under all of ``ps``."""
    red = [f for f in loops if f.var in reduced]
    if len(red) != 1 or not all(isinstance(f.lo, IntLit) and isinstance(f.hi, IntLit)
                                and f.step == 1 for f in loops):
        return False
    r = red[0]
    if len(ps) != 1:
        return _nonempty_interval(ps, loops, r)
    p = ps[0]
    a = p.coef(r.var)
    lo_r, hi_r = r.lo.value, r.hi.value - 1  # type: ignore[union-attr]
    if hi_r < lo_r:
        return False
    worst = p.const + min(a * lo_r, a * hi_r)
    for f in loops:
        if f is r:
            continue
        c = p.coef(f.var)
        lo, hi = f.lo.value, f.hi.value - 1  # type: ignore[union-attr]
        worst += max(c * lo, c * hi)
    return worst <= 0


def _extent(f: For) -> tuple[int, int]:
    """The first and last index of a loop with literal bounds."""
    assert isinstance(f.lo, IntLit) and isinstance(f.hi, IntLit)
    return f.lo.value, f.hi.value - 1


def _nonempty_interval(ps: tuple[Pred, ...], loops: tuple[For, ...], r: For) -> bool:
    """`nonempty` for a conjunction whose reduction coefficients are 0 or +-1.

    Each condition bounds ``r`` from one side by an affine form of the outer indices (or
    holds or fails regardless of ``r``). The points of ``r`` left form the interval
    ``[max lower, min upper]``: it is non-empty at every outer point exactly when every
    lower bound is at most every upper bound there, and each of these differences is
    affine, so its largest value over the box of outer loops is at a corner.
    """
    lo_r, hi_r = _extent(r)
    lower, upper = [Lin((), lo_r)], [Lin((), hi_r)]
    always: list[Lin] = []
    for p in ps:
        a = p.coef(r.var)
        rest = Lin.of({v: c for v, c in p.coefs if v != r.var}, p.const)
        if a == 1:  # r + rest <= 0: r <= -rest
            upper.append(rest.scaled(-1))
        elif a == -1:  # -r + rest <= 0: r >= rest
            lower.append(rest)
        elif a == 0:
            always.append(rest)
        else:
            return False
    outer = [f for f in loops if f is not r]

    def worst(lin: Lin) -> int:
        """The largest value of ``lin`` over the outer loops' box."""
        return lin.const + sum(
            max(lin.coef(f.var) * lo, lin.coef(f.var) * hi)
            for f in outer
            for lo, hi in (_extent(f),)
        )

    names = {f.var for f in outer}
    if any(v not in names for lin in (*lower, *upper, *always) for v, _ in lin.coefs):
        return False
    return all(worst(lo.add(hi, -1)) <= 0 for lo in lower for hi in upper) and all(
        worst(c) <= 0 for c in always)
