"""Folding of index-formula expressions: literals, selects, casts and boolean identities.

Contract: pure functions over `solar.ir` expressions. `fold` is one step at the root
(children already folded); `fold_all` folds bottom-up and turns affine comparisons
(with integer casts of indices dropped) into the canonical form of `pred_expr`.
`const_value` reads the literal value of an expression where other reads are finite
unknowns (Note [Constant masks] in `solar.ir.masks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from solar.ir.affine import linear_form
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
    IntLit,
    Kernel,
    Stmt,
    Unary,
    lit,
)
from solar.ir.predicates import pred_expr, pred_of
from solar.ir.traversal import is_index_condition, map_expr, map_exprs, walk_exprs

__all__ = [
    "const_value",
    "drop_identities",
    "finite_expr",
    "fold",
    "fold_all",
    "inline_literal_scalars",
    "is_boolean",
    "literal_value",
]


def literal_value(e: Expr) -> float | bool | None:
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


def fold(e: Expr) -> Expr | None:
    """One folding step at the root of ``e`` (children already folded)."""
    match e:
        case Cast(operand=o) if isinstance(literal_value(o), bool):
            return FloatLit(1.0 if literal_value(o) else 0.0)
        case Cast(operand=o) if isinstance(literal_value(o), float):
            return o
        case Cast(operand=Call(func="select", args=(c, a, b))):
            return Call("select", (c, fold(Cast(e.dtype, a)) or Cast(e.dtype, a),
                                   fold(Cast(e.dtype, b)) or Cast(e.dtype, b)))
        case Call(func="select", args=(BoolLit(value=v), a, b)):
            return a if v else b
        case Call(func="select", args=(c, Call(func="select", args=(c2, a, b)), b2)) if (
            b == b2 and _is_guard(c) and _is_guard(c2)
        ):
            # Note [Conjunctions]: a band built as ``tril(ones).triu(-w)``
            return Call("select", (Binary("and", c, c2), a, b))
        case Call(func="select", args=(c, a, BoolLit(value=False))) if (
            is_boolean(a) and _is_guard(c) and _is_guard(a)
        ):
            return Binary("and", c, a)
        case Binary(lhs=IntLit() | BoolLit(), rhs=IntLit() | BoolLit()):
            return _fold_int(e)
        case Call(func="min" | "max", args=(IntLit(value=a), IntLit(value=b))):
            return IntLit(min(a, b) if e.func == "min" else max(a, b))  # both >= 0
        case Binary(op="*" | "==" | "!="):
            return _fold_product(e)
        case _:
            return _fold_boolean(e)


_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
}
_INT_ARITH: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
}


def _fold_int(e: Binary) -> Expr | None:
    """Integer literal arithmetic and comparisons (an index's bounds check on a literal
    index: ``0 <= 5 and 5 <= 1023``), and logic on boolean literals; exact."""
    a, b = e.lhs, e.rhs
    if isinstance(a, IntLit) and isinstance(b, IntLit):
        if e.op in _COMPARE:
            return BoolLit(_COMPARE[e.op](a.value, b.value))
        if e.op in _INT_ARITH:
            return lit(_INT_ARITH[e.op](a.value, b.value))
        return None
    return _fold_boolean(e)


def _fold_product(e: Binary) -> Expr | None:
    """`fold` for a product of 0/1 masks, ``x * 1`` and a comparison of a literal select."""
    match e:
        case Binary(op="*", lhs=Call(func="select", args=(c1, a1, b1)),
                    rhs=Call(func="select", args=(c2, a2, b2))) if _is_guard(c1) and _is_guard(c2):
            # two 0/1 masks multiplied (``tril(ones) * triu(ones, -w)``): literals only
            la, lb, ra, rb = (literal_value(x) for x in (a1, b1, a2, b2))
            if not (isinstance(la, float) and isinstance(ra, float) and isinstance(lb, float)
                    and isinstance(rb, float)):
                return None
            if lb != 0.0 or rb != 0.0 or not (math.isfinite(la) and math.isfinite(ra)):
                return None
            return Call("select", (Binary("and", c1, c2), lit(la * ra), b1))
        case Binary(op="*", lhs=a, rhs=b) if _is_one(a) or _is_one(b):
            return b if _is_one(a) else a  # x * 1 is x exactly: no operation
        case Binary(op="==" | "!=", lhs=Call(func="select", args=(c, a, b)), rhs=r):
            la, lb, lr = literal_value(a), literal_value(b), literal_value(r)
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
        case Cast(dtype=DType.BOOL, operand=Cast(operand=b)) if is_boolean(b):
            return b  # a mask stored as 0.0/1.0 and read back as bool (flax)
        case Binary(op="==" | "!=", lhs=Cast(dtype=dt, operand=m), rhs=r) if is_boolean(m):
            one: Expr = FloatLit(1.0) if dt.is_float else IntLit(1)
            zero: Expr = FloatLit(0.0) if dt.is_float else IntLit(0)
            return fold(Binary(e.op, Call("select", (m, one, zero)), r))  # `mask != 0`
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


def is_boolean(e: Expr) -> bool:
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


def fold_all(e: Expr, loop_vars: frozenset[str]) -> Expr:
    def step(x: Expr) -> Expr | None:
        out = fold(x)
        if isinstance(out, Unary) and out.op == "not":
            p = pred_of(out, loop_vars)
            return out if p is None else pred_expr(p)
        cand = x if out is None else out
        if isinstance(cand, Binary) and cand.op in ("<=", "<", ">=", ">"):
            # an iota's value is its index: `i32(i) >= i32(j)` is the guard `i >= j`
            bare = Binary(cand.op, _uncast(cand.lhs, loop_vars), _uncast(cand.rhs, loop_vars))
            if bare != cand:
                p = pred_of(bare, loop_vars)
                return out if p is None else pred_expr(p)
        return out

    return map_expr(e, step)


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

    bare = map_expr(e, strip)
    return bare if linear_form(bare, {}, loop_vars=loop_vars) is not None else e


def const_value(e: Expr, finite: Callable[[Access], bool]) -> float | None:
    """The literal value of ``e``, treating other reads as finite unknowns, or None."""
    v = literal_value(e)
    if isinstance(v, float):
        return v
    match e:
        case Unary(op="-", operand=o):
            x = const_value(o, finite)
            return None if x is None else -x
        case Call(func="exp", args=(a,)):
            x = const_value(a, finite)
            return None if x is None else (0.0 if x == -math.inf else None)
        case Binary(op="-" | "+" | "*" | "/"):
            return _const_arith(e, finite)
        case Call(func="select", args=(_, a, b)):
            # both branches the same literal (PyTorch's _safe_softmax zeroes an all-masked
            # row, which a masked-out P already is): the condition does not matter
            x = const_value(a, finite)
            return x if x is not None and x == const_value(b, finite) else None
        case Cast(dtype=dt, operand=o) if dt.is_float:
            # Note [Exact casts]: 0, +-1 and +-inf are exact in every float type
            x = const_value(o, finite)
            return x if x in _EXACT else None
        case _:
            return None


def _const_arith(e: Binary, finite: Callable[[Access], bool]) -> float | None:
    """`const_value` of a sum, difference, product or quotient."""
    match e:
        case Binary(op="-" | "+", lhs=a, rhs=b):
            x = const_value(a, finite)
            if x is not None and math.isinf(x) and finite_expr(b, finite):
                return x  # inf +- a finite value
            y = const_value(b, finite)
            if y is not None and math.isinf(y) and finite_expr(a, finite):
                return y if e.op == "+" else -y  # a finite value +- inf
            return None
        case Binary(op="*", lhs=a, rhs=b):
            for p, q in ((a, b), (b, a)):
                if const_value(p, finite) == 0.0 and finite_expr(q, finite):
                    return 0.0
            return None
        case Binary(op="/", lhs=a, rhs=b):
            if const_value(a, finite) == 0.0 and finite_expr(b, finite):
                return 0.0
            return None
        case _:
            return None


def finite_expr(e: Expr, finite: Callable[[Access], bool]) -> bool:
    """True if ``e`` is finite under the finite-values assumption."""
    match e:
        case Access():
            return finite(e)
        case FloatLit(value=v):
            return math.isfinite(v)
        case IntLit():
            return True
        case Unary(op="-", operand=o):
            return finite_expr(o, finite)
        case Binary(op="+" | "-" | "*", lhs=a, rhs=b):
            return finite_expr(a, finite) and finite_expr(b, finite)
        case Cast(dtype=dt, operand=o) if dt.is_float:
            return finite_expr(o, finite)  # a finite value cast (the finite-values assumption)
        case _:
            return False


_EXACT = (0.0, 1.0, -1.0, math.inf, -math.inf)


def drop_identities(e: Expr) -> Expr:
    """``x + 0.0``, ``0.0 + x`` and ``x - 0.0`` as ``x`` (equal values; a masked score's
    ``+ 0.0`` outside the mask is no work)."""

    def step(x: Expr) -> Expr | None:
        match x:
            case Binary(op="+", lhs=a, rhs=FloatLit(value=0.0)):
                return a
            case Binary(op="+", lhs=FloatLit(value=0.0), rhs=b):
                return b
            case Binary(op="-", lhs=a, rhs=FloatLit(value=0.0)):
                return a
            case _:
                return None

    return map_expr(e, step)



def inline_literal_scalars(k: Kernel, writers: Callable[[str], int]) -> Kernel:
    """Note [Literal scalars]: a scalar local that a kernel writes once, at its top level,
    with a value of literals only (a scatter's clamped start and bounds check at a literal
    index, ``inb[] = 0 <= 5 and 5 <= 1023``), has that value at every later read: the
    reads are replaced by the folded value, so ``X[start[], u] = select(inb[], v[u],
    X[start[], u])`` is the affine write ``X[5, u] = v[u]`` the counters charge exactly.
    ``writers(name)`` is the number of statements that write ``name``."""
    local = {t.name for t in k.locals if not t.shape}
    known: dict[str, Expr] = {}

    def inline(e: Expr) -> Expr:
        r = map_expr(e, lambda x: known.get(x.tensor) if isinstance(x, Access) else None)
        return e if r is e else map_expr(r, fold)

    body: list[Stmt] = []
    for st in k.body:
        new = map_exprs(st, inline) if known else st
        if (isinstance(new, Assign) and new.target.tensor in local
                and writers(new.target.tensor) == 1
                and not any(isinstance(a, Access) for a in walk_exprs(new.value))):
            known[new.target.tensor] = map_expr(new.value, fold)
        body.append(new)
    return k if not known else replace(k, body=tuple(body))
