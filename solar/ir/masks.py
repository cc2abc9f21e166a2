"""Constant masks: fold index-only tensors and skip work a constant mask provably hides.

Contract: ``Program -> Program`` (pure; the same object when nothing applies). Runs on
verified IR before dead-code elimination, for the bounds only (Note [Constant masks]).

Note [Constant masks]: a causal mask written by hand (``masked_fill`` with a mask built
from ``ones(T, T).tril()``) is known when the program is captured: it depends on indices
only. Three steps turn it into guards the counters understand:

1. **Index formulas.** A temp written by one kernel, over its whole shape with plain
   loop indices, with a value that depends on indices only (a literal; or two writes
   under complementary affine conditions, as ``tril`` lowers) is a formula of its
   indices. Its reads are replaced by the formula (``t9[i, j]`` ->
   ``select(j <= i, 1.0, 0.0)``), and comparisons of such selects with literals fold
   (``select(j <= i, 1.0, 0.0) == 0.0`` -> ``i + 1 <= j``), as do products with the
   literal 1 (``ones_like(loss) * target`` -> ``target``: a backward's seed cotangent
   multiplies nothing; exact in IEEE arithmetic). Its kernel then has no reader
   and dead-code elimination removes it: an implementation can compute the mask from
   indices instead of reading it.
2. **Constant regions (forward).** ``X[v] = select(P, c, Y)`` with ``P`` affine in the
   indices and ``c`` a literal gives X the value ``c`` wherever ``P`` holds. A later
   statement whose value is then a literal there (``exp(X - m)`` is 0 where X is
   ``-inf``; ``E / s`` is 0 where E is 0) passes the region on; a reduction whose term is
   the identity of its operator there (``m max= X`` with ``-inf``, ``s += E`` or
   ``O += P * V`` with 0) is guarded by ``not P``: skipping an identity term leaves the
   result unchanged.
3. **Dead regions (backward).** A temp or local whose every read is guarded by one
   condition ``Q`` (an ``if`` or the branch of a ``select`` it sits in) is never read
   outside ``Q``: its writers are guarded by ``Q`` too (the upper triangle of ``Q K^T``
   is overwritten by the mask, so it need not be computed).

Soundness (the bound stays a lower bound): every rewrite preserves the values of every
program output for finite inputs. Assumptions, as for ``sdpa(is_causal=True)``: values
outside a known region are finite (``-inf - m`` is ``-inf``, ``0 * v`` is 0); a
``max=`` reduction is only taken as finite when its guarded range is provably non-empty
at every outer point (every row of a causal mask keeps its diagonal), otherwise
subtractions of it are not folded. Only affine comparisons over literal shapes are
handled; anything else is left as it is (dense work, a lower bound all the same).

Note [Conjunctions]: a sliding-window (local) attention mask keeps a band,
``i - w <= j <= i``: two comparisons joined by ``and`` (``tril(ones).triu(-w)``, whose
formula is a select nested in a select and folds to ``select(a and b, 1.0, 0.0)``;
``tril(ones) * triu(ones, -w)`` of two 0/1 literals; ``m1 & m2`` of two bool masks). A
condition is therefore a *conjunction* of affine comparisons (`_conj`): guards and
select branches add each of them, and the writers of a tensor read only inside the band
are guarded by all of them (nested ``if``s, which the counters count exactly). Its
negation is a disjunction, which no guard expresses, so a constant region is stored as
the conjunction *outside* of which the value holds (`_Region.outside`): the masked-out
scores of a band hold ``-inf`` outside ``a and b``, and the identity terms of a reduction
are skipped by guarding it with ``a and b``. A ``max=`` over a band is finite when every
row keeps a point (`_nonempty_interval`: with unit coefficients on the reduced index,
each comparison bounds it from one side, and the interval left is non-empty at every
outer point exactly when each lower bound is at most each upper bound over the box of
outer loops, an affine check at the box's corners). A disjunction (``not (a and b)``
inside a guard) is left alone: the work stays dense, a lower bound all the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from solar.ir.affine import Lin, linear_form
from solar.ir.nodes import (
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    DType,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    Unary,
    lit,
)
from solar.ir.traversal import is_index_condition

__all__ = ["elide_masked_work"]

Pred = Lin
"""An affine predicate ``lin <= 0``."""

_IDENTITY = {"+": 0.0, "max": -math.inf, "min": math.inf, "*": 1.0}


# ----------------------------------------------------------------------- predicates


def _pred(e: Expr, loop_vars: frozenset[str]) -> Pred | None:
    """``e`` as ``lin <= 0`` when it is an affine comparison of indices."""
    if isinstance(e, Unary) and e.op == "not":
        p = _pred(e.operand, loop_vars)
        return None if p is None else _negate(p)
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


def _negate(p: Pred) -> Pred:
    """``not (L <= 0)`` is ``-L + 1 <= 0`` over the integers."""
    return Lin.of({v: -c for v, c in p.coefs}, 1 - p.const)


def _conj(e: Expr, loop_vars: frozenset[str]) -> tuple[Pred, ...] | None:
    """``e`` as a conjunction of affine comparisons (Note [Conjunctions]), or None.

    ``true`` is the empty conjunction; ``a and b`` joins two; ``not (a or b)`` is
    ``not a and not b``; ``not (a and b)`` is a disjunction, so None.
    """
    match e:
        case BoolLit(value=True):
            return ()
        case Binary(op="and", lhs=a, rhs=b):
            ca, cb = _conj(a, loop_vars), _conj(b, loop_vars)
            return None if ca is None or cb is None else (*ca, *cb)
        case Unary(op="not", operand=Binary(op="or", lhs=a, rhs=b)):
            return _conj(Binary("and", Unary("not", a), Unary("not", b)), loop_vars)
        case Unary(op="not", operand=Unary(op="not", operand=o)):
            return _conj(o, loop_vars)
        case _:
            p = _pred(e, loop_vars)
            return None if p is None else (p,)


def _conj_not(e: Expr, loop_vars: frozenset[str]) -> tuple[Pred, ...] | None:
    """``not e`` as a conjunction of affine comparisons, or None."""
    return _conj(Unary("not", e), loop_vars)


def _all_from_dims(ps: tuple[Pred, ...], subscripts: tuple[Expr, ...],
                   loop_vars: frozenset[str]) -> tuple[Pred, ...] | None:
    out = tuple(_from_dims(p, subscripts, loop_vars) for p in ps)
    return None if any(q is None for q in out) else out  # type: ignore[return-value]


def _all_to_dims(ps: tuple[Pred, ...], subscripts: tuple[Expr, ...]) -> tuple[Pred, ...] | None:
    out = tuple(_to_dims(p, subscripts) for p in ps)
    return None if any(q is None for q in out) else out  # type: ignore[return-value]


def _pred_expr(p: Pred) -> Expr:
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


def _compose(p: Pred, subs: Mapping[str, Lin]) -> Pred | None:
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


def _to_dims(p: Pred, subscripts: tuple[Expr, ...]) -> Pred | None:
    """A predicate over loop variables as one over a tensor's dims (plain subscripts)."""
    names = {s.name: _dim(d) for d, s in enumerate(subscripts) if isinstance(s, Name)}
    if len(names) != sum(isinstance(s, Name) for s in subscripts):
        return None
    return _compose(p, {v: Lin(((names[v], 1),), 0) for v in names})


def _from_dims(p: Pred, subscripts: tuple[Expr, ...], loop_vars: frozenset[str]) -> Pred | None:
    """A predicate over a tensor's dims at the subscripts of an access."""
    subs: dict[str, Lin] = {}
    for d, s in enumerate(subscripts):
        lin = linear_form(s, {}, loop_vars=loop_vars)
        if lin is not None:
            subs[_dim(d)] = lin
    return _compose(p, subs)


# ----------------------------------------------------------------------- expressions


def _map(e: Expr, f: Callable[[Expr], Expr | None]) -> Expr:
    """Bottom-up rewrite: ``f`` returns a replacement or None."""
    match e:
        case Unary(operand=o):
            e = replace(e, operand=_map(o, f))
        case Binary(lhs=a, rhs=b):
            e = replace(e, lhs=_map(a, f), rhs=_map(b, f))
        case Call(args=args):
            e = replace(e, args=tuple(_map(a, f) for a in args))
        case Cast(operand=o):
            e = replace(e, operand=_map(o, f))
        case _:
            pass
    out = f(e)
    return e if out is None else out


def _lit(e: Expr) -> float | bool | None:
    if isinstance(e, FloatLit | IntLit):
        return float(e.value)
    if isinstance(e, BoolLit):
        return e.value
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.operand, FloatLit | IntLit):
        return -float(e.operand.value)
    return None


def _is_one(e: Expr) -> bool:
    """True for the float literal 1 (not ``true``: a mask times a value is a select)."""
    return isinstance(e, FloatLit) and e.value == 1.0


def _fold(e: Expr) -> Expr | None:
    """One folding step at the root of ``e`` (children already folded)."""
    match e:
        case Cast(operand=o) if isinstance(_lit(o), bool):
            return FloatLit(1.0 if _lit(o) else 0.0)
        case Cast(operand=o) if isinstance(_lit(o), float):
            return o
        case Cast(operand=Call(func="select", args=(c, a, b))):
            return Call("select", (c, _fold(Cast(e.dtype, a)) or Cast(e.dtype, a),
                                   _fold(Cast(e.dtype, b)) or Cast(e.dtype, b)))
        case Call(func="select", args=(BoolLit(value=v), a, b)):
            return a if v else b
        case Call(func="select", args=(c, Call(func="select", args=(c2, a, b)), b2)) if (
            b == b2 and _is_guard(c) and _is_guard(c2)
        ):
            # Note [Conjunctions]: a band built as ``tril(ones).triu(-w)``
            return Call("select", (Binary("and", c, c2), a, b))
        case Call(func="select", args=(c, a, BoolLit(value=False))) if (
            _is_boolean(a) and _is_guard(c) and _is_guard(a)
        ):
            return Binary("and", c, a)
        case Binary(op="*", lhs=Call(func="select", args=(c1, a1, b1)),
                    rhs=Call(func="select", args=(c2, a2, b2))) if _is_guard(c1) and _is_guard(c2):
            # two 0/1 masks multiplied (``tril(ones) * triu(ones, -w)``): literals only
            la, lb, ra, rb = _lit(a1), _lit(b1), _lit(a2), _lit(b2)
            if not (isinstance(la, float) and isinstance(ra, float) and isinstance(lb, float)
                    and isinstance(rb, float)):
                return None
            if lb != 0.0 or rb != 0.0 or not (math.isfinite(la) and math.isfinite(ra)):
                return None
            return Call("select", (Binary("and", c1, c2), lit(la * ra), b1))
        case Binary(op="*", lhs=a, rhs=b) if _is_one(a) or _is_one(b):
            return b if _is_one(a) else a  # x * 1 is x exactly: no operation
        case Binary(op="==" | "!=", lhs=Call(func="select", args=(c, a, b)), rhs=r):
            la, lb, lr = _lit(a), _lit(b), _lit(r)
            if la is None or lb is None or lr is None:
                return None
            ta, tb = (x == lr if e.op == "==" else x != lr for x in (la, lb))
            if ta and tb:
                return BoolLit(True)
            if not ta and not tb:
                return BoolLit(False)
            return c if ta else Unary("not", c)
        case _:
            return _fold_boolean(e)


def _fold_boolean(e: Expr) -> Expr | None:
    """Note [Boolean identities]: a mask formula substituted at its reads keeps the
    re-encodings JAX wraps around it (``select(c, true, false)``, ``true and c``,
    ``bool(f32(c))``, ``f32(c) != 0.0``); folded to ``c``, it is an affine guard again, and
    it costs what the read it replaced did, not more."""
    match e:
        case Cast(dtype=DType.BOOL, operand=Cast(operand=b)) if _is_boolean(b):
            return b  # a mask stored as 0.0/1.0 and read back as bool (flax)
        case Binary(op="==" | "!=", lhs=Cast(dtype=dt, operand=m), rhs=r) if _is_boolean(m):
            one: Expr = FloatLit(1.0) if dt.is_float else IntLit(1)
            zero: Expr = FloatLit(0.0) if dt.is_float else IntLit(0)
            return _fold(Binary(e.op, Call("select", (m, one, zero)), r))  # `mask != 0`
        case Call(func="select", args=(c, BoolLit(value=True), BoolLit(value=False))):
            return c  # jax.nn.dot_product_attention's causal mask
        case Call(func="select", args=(c, BoolLit(value=False), BoolLit(value=True))):
            return Unary("not", c)
        case Binary(op="and" | "or", lhs=BoolLit(value=v), rhs=x) | Binary(
            op="and" | "or", lhs=x, rhs=BoolLit(value=v)
        ):
            if v == (e.op == "and"):
                return x  # true and x, false or x
            return BoolLit(v)  # false and x, true or x
        case _:
            return None


def _is_guard(e: Expr) -> bool:
    """True if ``e`` is a condition on indices and sizes only, which the counters take as
    a guard (Note [Index-only selects]): folding two such conditions into one ``and``
    charges no work where a branch was not taken (Note [Conjunctions])."""
    return is_index_condition(e)


def _is_boolean(e: Expr) -> bool:
    """True if ``e`` is boolean-valued by construction (a comparison or logic)."""
    match e:
        case BoolLit():
            return True
        case Binary(op=op):
            return op in ("<", "<=", ">", ">=", "==", "!=", "and", "or")
        case Unary(op="not"):
            return True
        case _:
            return False


def _fold_all(e: Expr, loop_vars: frozenset[str]) -> Expr:
    def step(x: Expr) -> Expr | None:
        out = _fold(x)
        if isinstance(out, Unary) and out.op == "not":
            p = _pred(out, loop_vars)
            return out if p is None else _pred_expr(p)
        cand = x if out is None else out
        if isinstance(cand, Binary) and cand.op in ("<=", "<", ">=", ">"):
            # an iota's value is its index: `i32(i) >= i32(j)` is the guard `i >= j`
            bare = Binary(cand.op, _uncast(cand.lhs, loop_vars), _uncast(cand.rhs, loop_vars))
            if bare != cand:
                p = _pred(bare, loop_vars)
                return out if p is None else _pred_expr(p)
        return out

    return _map(e, step)


def _uncast(e: Expr, loop_vars: frozenset[str]) -> Expr:
    """Integer casts of affine index expressions dropped (indices fit), at any depth of an
    integer sum (``i32(i) + 3``), when the whole is then affine."""

    def strip(x: Expr) -> Expr | None:
        if (
            isinstance(x, Cast)
            and not x.dtype.is_float
            and x.dtype != DType.BOOL
            and linear_form(x.operand, {}, loop_vars=loop_vars) is not None
        ):
            return x.operand
        return None

    bare = _map(e, strip)
    return bare if linear_form(bare, {}, loop_vars=loop_vars) is not None else e


def _const_value(e: Expr, finite: Callable[[Access], bool]) -> float | None:
    """The literal value of ``e``, treating other reads as finite unknowns, or None."""
    v = _lit(e)
    if isinstance(v, float):
        return v
    match e:
        case Unary(op="-", operand=o):
            x = _const_value(o, finite)
            return None if x is None else -x
        case Call(func="exp", args=(a,)):
            x = _const_value(a, finite)
            return None if x is None else (0.0 if x == -math.inf else None)
        case Binary(op="-" | "+", lhs=a, rhs=b):
            x = _const_value(a, finite)
            if x is not None and math.isinf(x) and _finite_expr(b, finite):
                return x  # inf +- a finite value
            return None
        case Binary(op="*", lhs=a, rhs=b):
            for p, q in ((a, b), (b, a)):
                if _const_value(p, finite) == 0.0 and _finite_expr(q, finite):
                    return 0.0
            return None
        case Binary(op="/", lhs=a, rhs=b):
            if _const_value(a, finite) == 0.0 and _finite_expr(b, finite):
                return 0.0
            return None
        case _:
            return None


def _finite_expr(e: Expr, finite: Callable[[Access], bool]) -> bool:
    """True if ``e`` is finite under the finite-values assumption."""
    match e:
        case Access():
            return finite(e)
        case FloatLit(value=v):
            return math.isfinite(v)
        case IntLit():
            return True
        case Unary(op="-", operand=o):
            return _finite_expr(o, finite)
        case Binary(op="+" | "-" | "*", lhs=a, rhs=b):
            return _finite_expr(a, finite) and _finite_expr(b, finite)
        case _:
            return False


@dataclass(frozen=True, slots=True)
class _Region:
    """``tensor`` holds ``value`` wherever the conjunction ``outside`` (over its dims) does
    not hold, once written by ``target`` in ``kernel`` (a read in that same kernel counts
    only at the same subscripts, i.e. the element the writer has just produced). Stored
    as its complement so that a band's two masked-out triangles are one region (Note
    [Conjunctions])."""

    value: float
    outside: tuple[Pred, ...]
    kernel: str = ""
    target: tuple[Expr, ...] = ()


# ----------------------------------------------------------------------- statements

_Leaf = Assign | Reduce
_Visit = Callable[[_Leaf, tuple[For, ...], tuple[Pred, ...]], Stmt]


def _loop_vars(loops: tuple[For, ...]) -> frozenset[str]:
    return frozenset(f.var for f in loops)


def _walk(body: tuple[Stmt, ...], visit: _Visit, loops: tuple[For, ...] = (),
          guards: tuple[Pred, ...] = ()) -> tuple[Stmt, ...]:
    """Rewrite every leaf with ``visit(leaf, enclosing loops, enclosing index guards)``."""
    out: list[Stmt] = []
    for st in body:
        match st:
            case For():
                out.append(replace(st, body=_walk(st.body, visit, (*loops, st), guards)))
            case If():
                ps = _conj(st.cond, _loop_vars(loops))
                g = guards if ps is None else (*guards, *ps)
                out.append(replace(st, body=_walk(st.body, visit, loops, g)))
            case _:
                out.append(visit(st, loops, guards))
    return tuple(out)


def _leaves(program: Program) -> list[tuple[_Leaf, tuple[For, ...], tuple[Pred, ...]]]:
    found: list[tuple[_Leaf, tuple[For, ...], tuple[Pred, ...]]] = []

    def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
        found.append((st, loops, guards))
        return st

    for k in program.kernels:
        _walk(k.body, visit)
    return found


def _guarded(st: Stmt, ps: tuple[Pred, ...], guards: tuple[Pred, ...]) -> Stmt:
    """``st`` under every condition of ``ps`` not among ``guards`` (innermost last)."""
    for p in reversed(ps):
        if p not in guards:
            st = If(_pred_expr(p), (st,))
    return st


def _reads(e: Expr, preds: tuple[Pred, ...], loop_vars: frozenset[str],
           out: list[tuple[Access, tuple[Pred, ...]]]) -> None:
    """Every read in ``e`` with the select-branch conditions it sits under."""
    match e:
        case Access():
            out.append((e, preds))
            for i in e.indices:
                _reads(i, preds, loop_vars, out)
        case Call(func="select", args=(c, a, b)):
            _reads(c, preds, loop_vars, out)
            pa, pb = _conj(c, loop_vars), _conj_not(c, loop_vars)
            _reads(a, preds if pa is None else (*preds, *pa), loop_vars, out)
            _reads(b, preds if pb is None else (*preds, *pb), loop_vars, out)
        case Unary(operand=o) | Cast(operand=o):
            _reads(o, preds, loop_vars, out)
        case Binary(lhs=a, rhs=b):
            _reads(a, preds, loop_vars, out)
            _reads(b, preds, loop_vars, out)
        case Call(args=args):
            for a in args:
                _reads(a, preds, loop_vars, out)
        case _:
            pass


def _subst(e: Expr, target: Access, value: Expr) -> Expr:
    return _map(e, lambda x: value if x == target else None)


# ----------------------------------------------------------------------- the pass


class _Masks:
    """The state of one run of `elide_masked_work` over a program."""

    def __init__(self, program: Program, keep: frozenset[str]) -> None:
        self.program = program
        self.decls = {t.name: t for t in program.tensors}
        for k in program.kernels:
            self.decls.update((t.name, t) for t in k.locals)
        self.keep = keep
        self.writers: dict[str, int] = {}
        for st, _, _ in _leaves(program):
            self.writers[st.target.tensor] = self.writers.get(st.target.tensor, 0) + 1

    def full_range(self, target: Access, loops: tuple[For, ...]) -> bool:
        """The target's subscripts are distinct plain loops over the whole shape."""
        decl = self.decls[target.tensor]
        by_var = {f.var: f for f in loops}
        seen: set[str] = set()
        for s, extent in zip(target.indices, decl.shape, strict=True):
            if isinstance(s, IntLit) and s.value == 0 and extent == IntLit(1):
                continue
            if not isinstance(s, Name) or s.name not in by_var or s.name in seen:
                return False
            f = by_var[s.name]
            seen.add(s.name)
            if f.seq or f.step != 1 or f.lo != IntLit(0) or f.hi != extent:
                return False
        return True

    def maskable(self, name: str) -> bool:
        decl = self.decls.get(name)
        return (decl is not None and decl.role in ("temp", "local")
                and name not in self.keep and self.writers.get(name, 0) >= 1)


def _formula(m: _Masks, k: Kernel) -> tuple[str, Access, Expr] | None:
    """``(tensor, its write access, value)`` when kernel ``k`` writes an index formula."""
    loops: list[For] = []
    body = k.body
    while len(body) == 1 and isinstance(body[0], For):
        loops.append(body[0])
        body = body[0].body
    lv = _loop_vars(tuple(loops))
    if len(body) == 1 and isinstance(body[0], Assign):
        target, value = body[0].target, body[0].value
    elif (len(body) == 2 and all(isinstance(b, If) and len(b.body) == 1
                                 and isinstance(b.body[0], Assign) for b in body)):
        (c1, s1), (c2, s2) = ((b.cond, b.body[0]) for b in body)  # type: ignore[union-attr]
        p1, p2 = _pred(c1, lv), _pred(c2, lv)
        if p1 is None or p2 != _negate(p1) or s1.target != s2.target:  # type: ignore[union-attr]
            return None
        target, value = s1.target, Call("select", (c1, s1.value, s2.value))  # type: ignore[union-attr]
    else:
        return None
    name = target.tensor
    if (m.decls[name].role != "temp" or m.writers.get(name) != len(body) or k.locals
            or not m.full_range(target, tuple(loops))):
        return None
    if any(isinstance(x, Access) for x in _all(value)):
        return None
    return name, target, _fold_all(value, lv)


def _all(e: Expr) -> list[Expr]:
    out: list[Expr] = []
    _map(e, lambda x: out.append(x) or None)  # type: ignore[func-returns-value]
    return out


def _inline_formulas(m: _Masks) -> Program:
    """Step 1: replace reads of index-formula temps by their formulas."""
    formulas: dict[str, tuple[Access, Expr]] = {}
    kernels = []
    for k in m.program.kernels:
        if formulas:
            def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
                lv = _loop_vars(loops)
                if isinstance(st, Reduce) and sum(isinstance(x, Access)
                                                  for x in _all(st.value)) >= 2:
                    # a product of two reads is tensor-core work; a literal in place of
                    # one would move it to the vector pipe, which can be slower
                    return st

                def sub(x: Expr) -> Expr | None:
                    if isinstance(x, Access) and x.tensor in formulas:
                        w, f = formulas[x.tensor]
                        names = {s.name: i for s, i in zip(w.indices, x.indices, strict=True)
                                 if isinstance(s, Name)}
                        return _map(f, lambda y: names.get(y.name) if isinstance(y, Name)
                                    else None)
                    return None

                new = _fold_all(_map(st.value, sub), lv)
                return st if new == st.value else replace(st, value=new)

            k = replace(k, body=_walk(k.body, visit))
        f = _formula(m, k)
        if f is not None:
            formulas[f[0]] = (f[1], f[2])
        kernels.append(k)
    return replace(m.program, kernels=tuple(kernels))


def _nonempty(ps: tuple[Pred, ...], loops: tuple[For, ...], reduced: frozenset[str]) -> bool:
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
    """`_nonempty` for a conjunction whose reduction coefficients are 0 or +-1.

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


def _forward(m: _Masks, program: Program) -> Program:
    """Step 2: constant regions and the reductions they make identity terms."""
    regions: dict[str, _Region] = {}
    nonfinite: set[str] = set()
    current = [""]

    def finite(a: Access) -> bool:
        return a.tensor not in nonfinite

    def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
        lv = _loop_vars(loops)
        hits = _hits(st.value, lv, regions, current[0])
        if isinstance(st, Reduce):
            return _reduce(st, loops, guards, hits)
        if m.writers.get(st.target.tensor) == 1 and m.full_range(st.target, loops) and not guards:
            region = _assign_region(st, lv, hits, finite)
            if region is not None:
                regions[st.target.tensor] = replace(region, kernel=current[0],
                                                    target=st.target.indices)
        return st

    def _reduce(st: Reduce, loops: tuple[For, ...], guards: tuple[Pred, ...],
                hits: list[tuple[Access, _Region, tuple[Pred, ...]]]) -> Stmt:
        ident = _IDENTITY.get(st.op)
        for a, r, keep in hits:
            v = _const_value(_subst(st.value, a, lit(r.value)), finite)
            if ident is None or v != ident:
                continue
            if st.op in ("max", "min"):
                reduced = _loop_vars(loops) - {s.name for s in st.target.indices
                                                if isinstance(s, Name)}
                if not _nonempty(keep, loops, reduced):
                    nonfinite.add(st.target.tensor)
            return _guarded(st, keep, guards)
        if st.op in ("max", "min"):
            nonfinite.add(st.target.tensor) if any(
                math.isinf(r.value) for _, r, _ in hits) else None
        return st

    kernels = []
    for k in program.kernels:
        current[0] = k.name
        kernels.append(replace(k, body=_walk(k.body, visit)))
    return replace(program, kernels=tuple(kernels))


def _hits(value: Expr, lv: frozenset[str], regions: Mapping[str, _Region],
          kernel: str) -> list[tuple[Access, _Region, tuple[Pred, ...]]]:
    """The reads of ``value`` that fall in a known region, with the conditions (over the
    loop variables) outside of which they do."""
    hits = []
    for a, _ in _collect(value, lv):
        r = regions.get(a.tensor)
        if r is None or (r.kernel == kernel and a.indices != r.target):
            continue
        ps = _all_from_dims(r.outside, a.indices, lv)
        if ps is not None:
            hits.append((a, r, ps))
    return hits


def _assign_region(st: Assign, lv: frozenset[str],
                   hits: list[tuple[Access, _Region, tuple[Pred, ...]]],
                   finite: Callable[[Access], bool]) -> _Region | None:
    """The constant region an assignment over a whole tensor gives its target, if any."""
    target, sel = st.target, st.value
    if isinstance(sel, Call) and sel.func == "select":
        c = sel.args[0]
        # the first branch is taken inside `c`, so outside `not c`; the second outside `c`
        for value, outside in ((sel.args[1], _conj_not(c, lv)), (sel.args[2], _conj(c, lv))):
            v = _lit(value)
            dims = None if not outside else _all_to_dims(outside, target.indices)
            if isinstance(v, float) and dims is not None:
                return _Region(v, dims)
    for a, r, ps in hits:
        v = _const_value(_subst(st.value, a, lit(r.value)), finite)
        dims = _all_to_dims(ps, target.indices)
        if v is not None and dims is not None:
            return _Region(v, dims)
    return None


def _collect(e: Expr, lv: frozenset[str]) -> list[tuple[Access, tuple[Pred, ...]]]:
    out: list[tuple[Access, tuple[Pred, ...]]] = []
    _reads(e, (), lv, out)
    return out


def _backward(m: _Masks, program: Program) -> Program:
    """Step 3: guard the writers of a temp or local that is only read under one condition."""
    for _ in range(16):
        sites: dict[str, list[tuple[Access, tuple[Pred, ...], frozenset[str]]]] = {}
        for st, loops, guards in _leaves(program):
            lv = _loop_vars(loops)
            for a, preds in _collect(st.value, lv):
                sites.setdefault(a.tensor, []).append((a, (*guards, *preds), lv))
            for i in st.target.indices:
                for a, preds in _collect(i, lv):
                    sites.setdefault(a.tensor, []).append((a, (*guards, *preds), lv))
        for k in program.kernels:
            _cond_sites(k.body, (), (), sites)
        changed = False
        for name, reads in sites.items():
            q = _common_guard(reads) if m.maskable(name) else None
            if q is None:
                continue
            new = _guard_writers(program, name, q)
            if new is not program:
                program, changed = new, True
        if not changed:
            break
    return program


def _cond_sites(body: tuple[Stmt, ...], loops: tuple[For, ...], guards: tuple[Pred, ...],
                sites: dict[str, list[tuple[Access, tuple[Pred, ...], frozenset[str]]]]) -> None:
    """The reads in ``if`` conditions (value-dependent ones read tensors too)."""
    for st in body:
        if isinstance(st, For):
            _cond_sites(st.body, (*loops, st), guards, sites)
        elif isinstance(st, If):
            lv = _loop_vars(loops)
            for a, preds in _collect(st.cond, lv):
                sites.setdefault(a.tensor, []).append((a, (*guards, *preds), lv))
            ps = _conj(st.cond, lv)
            _cond_sites(st.body, loops, guards if ps is None else (*guards, *ps), sites)


def _common_guard(
    reads: list[tuple[Access, tuple[Pred, ...], frozenset[str]]],
) -> tuple[Pred, ...] | None:
    """The conditions over the tensor's dims that every read sits under, if any."""
    first, guards, _ = reads[0]
    common: list[Pred] = []
    for g in guards:
        q = _to_dims_partial(g, first.indices)
        if q is None or q in common:
            continue
        if all(_from_dims(q, a.indices, lv) in gs for a, gs, lv in reads):
            common.append(q)
    return tuple(common) or None


def _to_dims_partial(p: Pred, subscripts: tuple[Expr, ...]) -> Pred | None:
    names: dict[str, str] = {}
    for d, s in enumerate(subscripts):
        if isinstance(s, Name):
            if s.name in names:
                return None
            names[s.name] = _dim(d)
    return _compose(p, {v: Lin(((names[v], 1),), 0) for v in names})


def _guard_writers(program: Program, name: str, qs: tuple[Pred, ...]) -> Program:
    def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
        if st.target.tensor != name:
            return st
        lv = _loop_vars(loops)
        ps = tuple(p for q in qs if (p := _from_dims(q, st.target.indices, lv)) is not None)
        return _guarded(st, ps, guards)

    kernels = tuple(replace(k, body=_walk(k.body, visit)) for k in program.kernels)
    return program if kernels == program.kernels else replace(program, kernels=kernels)


def elide_masked_work(program: Program, *, keep: frozenset[str] = frozenset()) -> Program:
    """Skip the work a constant, index-only mask hides (Note [Constant masks]).

    Args:
        program: verified IR.
        keep: tensors read outside the IR (uncovered ops): never guarded.

    Returns:
        An equivalent program (same outputs for finite inputs) with the mask computed
        from indices and the masked-out work under guards; ``program`` itself when no
        mask applies.
    """
    m = _Masks(program, keep)
    p = _inline_formulas(m)
    m = _Masks(p, keep)
    p = _forward(m, p)
    p = _backward(m, p)
    return program if p == program else p


# ----------------------------------------------------------------------- constant params


def constant_params(program: Program, values: Mapping[str, object]) -> Program:
    """Turn parameters whose captured values are an index pattern into index formulas.

    A buffer such as ``register_buffer("bias", torch.ones(T, T).tril())`` is known when
    the program is captured. A ``param`` whose value (in ``values``, by IR name, with the
    declared shape) is constant over its leading dims and, over its last two dims ``(i,
    j)``, one value where ``j - i <= k`` (or ``i - j <= k``) and another elsewhere,
    becomes a temp written from indices by a new first kernel; `elide_masked_work` then
    folds it (Note [Constant masks]). Float and bool values only.

    Returns:
        The program with such parameters rewritten, or ``program`` itself.
    """
    import numpy as np

    kernels: list[Kernel] = []
    tensors = list(program.tensors)
    for n, t in enumerate(program.tensors):
        v = values.get(t.name)
        if t.role != "param" or not isinstance(v, np.ndarray):
            continue
        offset = _iota_offset(v, t.shape, t.dtype)
        if offset is not None:
            kernels.append(_iota_kernel(t.name, t.shape[0], t.dtype, offset))
            tensors[n] = replace(t, role="temp")
            continue
        if len(t.shape) < 2:
            continue
        if v.dtype.kind not in "fb" or not all(isinstance(s, IntLit) for s in t.shape):
            continue
        if tuple(v.shape) != tuple(s.value for s in t.shape):  # type: ignore[union-attr]
            continue
        pattern = _tri_pattern(v.reshape(-1, v.shape[-2], v.shape[-1]))
        if pattern is None:
            continue
        kernels.append(_formula_kernel(t.name, t.shape, *pattern))
        tensors[n] = replace(t, role="temp")
    if not kernels:
        return program
    return replace(program, tensors=tuple(tensors), kernels=(*kernels, *program.kernels))


def _iota_offset(v: object, shape: tuple[Expr, ...], dtype: DType) -> int | None:
    """``c`` when ``v`` is the integer vector ``arange(n) + c`` (``n >= 2``), else None.

    Note [Iota parameters]: JAX captures ``jnp.arange(T)`` inside a traced function as a
    constant, which the IR takes as a parameter; a sliding-window mask compares two of
    them (``q_pos >= k_pos`` and ``q_pos <= k_pos + w``). As a formula of its index the
    comparison is an affine guard (Note [Conjunctions]); the values are the same.
    """
    import numpy as np

    arr = np.asarray(v)
    if (len(shape) != 1 or not isinstance(shape[0], IntLit) or dtype.is_float
            or dtype == DType.BOOL or arr.ndim != 1 or arr.shape[0] != shape[0].value
            or arr.shape[0] < 2 or arr.dtype.kind not in "iu"):
        return None
    offset = int(arr[0])
    if not np.array_equal(arr, np.arange(arr.shape[0]) + offset):
        return None
    return offset


def _iota_kernel(name: str, extent: Expr, dtype: DType, offset: int) -> Kernel:
    value: Expr = Cast(dtype, Name("c0"))
    if offset:
        value = Binary("+" if offset > 0 else "-", value, IntLit(abs(offset)))
    body = For("c0", IntLit(0), extent, (Assign(Access(name, (Name("c0"),)), value),))
    return Kernel(f"{name}_from_indices", (), (body,))


def _tri_pattern(v: object) -> tuple[bool, int, float | bool, float | bool] | None:
    """``(lower, k, a, b)``: ``v[., i, j]`` is ``a`` where ``j - i <= k`` (lower) or
    ``i - j <= k`` (upper), else ``b``; None for any other pattern."""
    import numpy as np

    arr = np.asarray(v)
    if not (arr == arr[:1]).all():
        return None
    m = arr[0]
    if (m == m.flat[0]).all():
        # Note [Uniform parameters]: one value everywhere is an initializer's (zeros, ones),
        # not a mask: a trainable weight that starts at zero (LoRA's B, a zero-initialised
        # projection, stacked biases) still does its work at every later step, and a
        # select between equal values would only add FLOPs at every read.
        return None
    rows, cols = m.shape
    i, j = np.indices(m.shape)
    a = m[0, 0].item()
    for lower, line, diff, span in ((True, m[0], j - i, cols), (False, m[:, 0], i - j, rows)):
        run = int(np.argmin(line == a)) if not (line == a).all() else span
        b = line[run].item() if run < span else a
        k = run - 1
        if np.array_equal(m, np.where(diff <= k, a, b)):
            return lower, k, a, b
    return None


def _formula_kernel(name: str, shape: tuple[Expr, ...], lower: bool, k: int,
                    a: float | bool, b: float | bool) -> Kernel:
    dims = [f"c{d}" for d in range(len(shape))]
    i, j = Name(dims[-2]), Name(dims[-1])
    cond = _pred_expr(Lin.of({j.name: 1, i.name: -1} if lower else {i.name: 1, j.name: -1}, -k))
    body: Stmt = Assign(Access(name, tuple(Name(d) for d in dims)),
                        Call("select", (cond, lit(a), lit(b))))
    for d, extent in reversed(list(zip(dims, shape, strict=True))):
        body = For(d, IntLit(0), extent, (body,))
    return Kernel(f"{name}_from_indices", (), (body,))
