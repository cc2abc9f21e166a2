"""Affine predicates over loop indices: the condition algebra of the mask pass.

Contract: pure functions over `solar.ir` expressions and `Lin` forms. A `Pred` is
``lin <= 0`` over the integers; a *conjunction* is a tuple of them (Note [Conjunctions]
in `solar.ir.masks`). A predicate can be moved between the loop variables of an access
and the dims of the tensor it reads (``_0``, ``_1``...: `to_dims`, `from_dims`), printed
back as an IR comparison (`pred_expr`), and checked for a non-empty reduction range
(`nonempty`). Anything not affine gives None: the caller then leaves the work dense.

Note [Size terms]: a mask's offsets are often named sizes, not literals (a sliding window
``j > i - W`` with ``W = 128`` a module constant, which the frontend keeps as the size
``W`` so that the bound is a formula of it). Callers pass the loop variables together
with the program's size names to `pred_of`/`conjunction`, so a size is a variable of the
predicate, and pass the size names as ``sizes`` to `compose` and the dim conversions,
which keep a size as itself while they substitute loop variables and dims. `nonempty`
already takes every variable outside its box of loops as a size, positive at every
binding.
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
                   loop_vars: frozenset[str], sizes: frozenset[str] = frozenset()
                   ) -> tuple[Pred, ...] | None:
    out = tuple(from_dims(p, subscripts, loop_vars, sizes) for p in ps)
    return None if any(q is None for q in out) else out  # type: ignore[return-value]


def all_to_dims(ps: tuple[Pred, ...], subscripts: tuple[Expr, ...],
                sizes: frozenset[str] = frozenset()) -> tuple[Pred, ...] | None:
    out = tuple(to_dims(p, subscripts, sizes) for p in ps)
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


def compose(p: Pred, subs: Mapping[str, Lin], sizes: frozenset[str] = frozenset()
            ) -> Pred | None:
    """Substitute affine forms for the variables of ``p``; a size (Note [Size terms])
    stays itself, any other variable without a form makes the result None."""
    coefs: dict[str, int] = {}
    const = p.const
    for v, c in p.coefs:
        if v not in subs and v in sizes:
            coefs[v] = coefs.get(v, 0) + c
            continue
        if v not in subs:
            return None
        for w, d in subs[v].coefs:
            coefs[w] = coefs.get(w, 0) + c * d
        const += c * subs[v].const
    return Lin.of(coefs, const)


def _dim(d: int) -> str:
    return f"_{d}"


def to_dims(p: Pred, subscripts: tuple[Expr, ...], sizes: frozenset[str] = frozenset()
            ) -> Pred | None:
    """A predicate over loop variables as one over a tensor's dims (plain subscripts)."""
    loops = [(d, s.name) for d, s in enumerate(subscripts)
             if isinstance(s, Name) and s.name not in sizes]
    names = {v: _dim(d) for d, v in loops}
    if len(names) != len(loops) or len(loops) != sum(isinstance(s, Name) for s in subscripts):
        return None
    return compose(p, {v: Lin(((names[v], 1),), 0) for v in names}, sizes)


def from_dims(p: Pred, subscripts: tuple[Expr, ...], loop_vars: frozenset[str],
              sizes: frozenset[str] = frozenset()) -> Pred | None:
    """A predicate over a tensor's dims at the subscripts of an access."""
    subs: dict[str, Lin] = {}
    for d, s in enumerate(subscripts):
        lin = linear_form(s, {}, loop_vars=loop_vars | sizes)
        if lin is not None:
            subs[_dim(d)] = lin
    return compose(p, subs, sizes)


def to_dims_partial(p: Pred, subscripts: tuple[Expr, ...], sizes: frozenset[str] = frozenset()
                    ) -> Pred | None:
    names: dict[str, str] = {}
    for d, s in enumerate(subscripts):
        if isinstance(s, Name) and s.name not in sizes:
            if s.name in names:
                return None
            names[s.name] = _dim(d)
    return compose(p, {v: Lin(((names[v], 1),), 0) for v in names}, sizes)


def nonempty(ps: tuple[Pred, ...], loops: tuple[For, ...], reduced: frozenset[str]) -> bool:
    """Every outer point of ``loops`` keeps at least one reduction point under all of ``ps``.

    Loop bounds may be affine in sizes (``0 .. L``): the check then holds for every
    binding of the sizes to positive integers (`_box`), so a causal mask over a
    symbolic sequence length keeps its diagonal at any length.
    """
    red = [f for f in loops if f.var in reduced]
    box = _box(loops)
    if len(red) != 1 or box is None:
        return False
    r = red[0]
    lo_r, hi_r = box[r.var]
    if not _nonpositive(lo_r.add(hi_r, -1)):
        return False  # the reduced loop may be empty
    outer = {v: b for v, b in box.items() if v != r.var}
    if len(ps) != 1:
        return _nonempty_interval(ps, r, lo_r, hi_r, outer)
    p = ps[0]
    a = p.coef(r.var)
    rest = Lin.of({v: c for v, c in p.coefs if v != r.var}, p.const)
    # the smallest value of a * r is at r's first index when a > 0, else at its last
    best = (lo_r if a > 0 else hi_r).scaled(a)
    return _nonpositive(_largest(rest, outer).add(best))


def _box(loops: tuple[For, ...]) -> dict[str, tuple[Lin, Lin]] | None:
    """Each loop's first and last index as affine forms of sizes (None when a bound reads
    another loop's variable, or a step is not 1)."""
    out: dict[str, tuple[Lin, Lin]] = {}
    names = {f.var for f in loops}
    for f in loops:
        lo, hi = linear_form(f.lo, {}), linear_form(f.hi, {})
        if f.step != 1 or lo is None or hi is None or (lo.vars() | hi.vars()) & names:
            return None
        out[f.var] = (lo, hi.add(Lin((), 1), -1))
    return out


def _largest(lin: Lin, box: Mapping[str, tuple[Lin, Lin]]) -> Lin:
    """The largest value of ``lin`` over the box, as an affine form of sizes: each loop
    variable at its last index where its coefficient is positive, else at its first
    (every loop of the box runs at least once where the point exists at all)."""
    out = Lin((), lin.const)
    for v, c in lin.coefs:
        if v in box:
            out = out.add(box[v][1] if c > 0 else box[v][0], c)
        else:
            out = out.add(Lin(((v, 1),), 0), c)
    return out


def _nonpositive(lin: Lin) -> bool:
    """``lin <= 0`` for every binding of its variables (sizes) to positive integers:
    no positive coefficient, and the value at all-ones is at most 0."""
    return all(c <= 0 for _, c in lin.coefs) and lin.const + sum(c for _, c in lin.coefs) <= 0


def _nonempty_interval(ps: tuple[Pred, ...], r: For, lo_r: Lin, hi_r: Lin,
                       outer: Mapping[str, tuple[Lin, Lin]]) -> bool:
    """`nonempty` for a conjunction whose reduction coefficients are 0 or +-1.

    Each condition bounds ``r`` from one side by an affine form of the outer indices (or
    holds or fails regardless of ``r``). The points of ``r`` left form the interval
    ``[max lower, min upper]``: it is non-empty at every outer point exactly when every
    lower bound is at most every upper bound there, and each of these differences is
    affine, so its largest value over the box of outer loops is at a corner.
    """
    lower, upper = [lo_r], [hi_r]
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
    return all(_nonpositive(_largest(lo.add(hi, -1), outer)) for lo in lower for hi in upper
               ) and all(_nonpositive(_largest(c, outer)) for c in always)
