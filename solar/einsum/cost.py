"""FLOP rules and per-statement work analysis (docs/bounds.md, "FLOP rules").

Contract: pure helpers over `solar.ir` expressions. The rules, used everywhere:

* a multiply-add is 2 FLOPs (a ``+=`` of a product: 1 multiply + 1 combine);
* each arithmetic op (``+ - * / // %``, unary ``-``), comparison, ``select`` and
  library function (`solar.ir.FUNCTIONS`) is 1 FLOP;
* casts, tensor accesses, literals, logical ``and``/``or``/``not``, index
  arithmetic inside subscripts, and operations whose operands are all
  loop-invariant constants (literals and sizes: constant-folded) are 0;
* a Reduce adds 1 for its combine op; a plain copy or ``= 0.0`` is 0;
* guards restrict counts to the points that execute. A ``select`` on an affine
  (index-only) condition charges each branch only where it is taken, and nothing for
  the condition or the select itself (Note [Index-only selects]); on a
  value-dependent condition it charges 1 for the select, the condition, and the
  cheaper branch everywhere, and reads only the accesses both branches share (a lower
  bound either way).

Note [Index-only selects]
    ``select(j <= i, S[i, j], -inf)`` (a causal mask) or ``select(0 <= h + r - 1 and
    h + r - 1 < H, X[..], 0.0)`` (zero padding) depend on loop indices and sizes only.
    An implementation splits the loop at the boundary (or pads once): it never
    compares indices per point, so charging the comparisons and the select at every
    point would count work the program need not do, above a real time. As index
    arithmetic inside subscripts, they are free; each branch still costs its own
    FLOPs, charged where it is taken.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from solar.ir import (
    FUNCTIONS,
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    Expr,
    FloatLit,
    IntLit,
    Name,
    Reduce,
    Unary,
    is_index_condition,
    walk_exprs,
)

__all__ = [
    "FlopTerm",
    "ReadSite",
    "analyse_value",
    "contraction_operands",
    "flops_per_point",
    "is_affine_condition",
    "negate_condition",
]

_ARITH = frozenset({"+", "-", "*", "/", "//", "%"})
_COMPARE = frozenset({"<", "<=", ">", ">=", "==", "!="})
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


@dataclass(frozen=True, slots=True)
class FlopTerm:
    """``flops`` per point of the statement's domain restricted by ``guards``."""

    flops: int
    guards: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class ReadSite:
    """A tensor read, executed at the points of the domain that satisfy ``guards``."""

    access: Access
    guards: tuple[Expr, ...]


def is_affine_condition(expr: Expr, loop_vars: Iterable[str]) -> bool:
    """True if ``expr`` is a condition on loop indices and sizes only (a guard).

    Every name is a loop index or a size (both integers), so ``loop_vars`` does not
    change the answer: `solar.ir.is_index_condition`.

    >>> from solar.ir import parse_expr as p
    >>> is_affine_condition(p("0 <= 2 * h + r - 1 and 2 * h + r - 1 < H"), ["h", "r"])
    True
    """
    del loop_vars
    return is_index_condition(expr)


def negate_condition(expr: Expr) -> Expr:
    """The logical negation, pushed through comparisons and ``and``/``or``.

    >>> from solar.ir import parse_expr as p, print_expr
    >>> print_expr(negate_condition(p("j <= i and i < N")))
    'j > i or i >= N'
    """
    match expr:
        case Binary(op=op, lhs=a, rhs=b) if op in _NEGATED:
            return Binary(_NEGATED[op], a, b)
        case Binary(op="and", lhs=a, rhs=b):
            return Binary("or", negate_condition(a), negate_condition(b))
        case Binary(op="or", lhs=a, rhs=b):
            return Binary("and", negate_condition(a), negate_condition(b))
        case Unary(op="not", operand=o):
            return o
        case BoolLit(value=v):
            return BoolLit(not v)
        case _:
            return Unary("not", expr)


def _invariant(expr: Expr, loop_vars: frozenset[str]) -> bool:
    """No tensor read and no loop index: a constant the compiler folds."""
    for e in walk_exprs(expr):
        if isinstance(e, Access) or (isinstance(e, Name) and e.name in loop_vars):
            return False
    return True


def _conjuncts(cond: Expr) -> tuple[Expr, ...]:
    if isinstance(cond, Binary) and cond.op == "and":
        return (*_conjuncts(cond.lhs), *_conjuncts(cond.rhs))
    return (cond,)


def _index_reads(access: Access, guards: tuple[Expr, ...]) -> list[ReadSite]:
    return [
        ReadSite(e, guards)
        for idx in access.indices
        for e in walk_exprs(idx)
        if isinstance(e, Access)
    ]


def analyse_value(
    expr: Expr, loop_vars: Iterable[str], guards: tuple[Expr, ...] = ()
) -> tuple[list[FlopTerm], list[ReadSite]]:
    """FLOP terms and tensor reads of a value expression (see the module rules).

    Args:
        expr: the value (or a value-dependent condition).
        loop_vars: the loop indices in scope.
        guards: guards already restricting where ``expr`` is evaluated.

    Returns:
        ``(terms, reads)``; terms with equal guards are merged.
    """
    walk = _ValueWalk(frozenset(loop_vars))
    walk.go(expr, guards)
    return [FlopTerm(n, g) for g, n in walk.terms.items()], walk.reads


@dataclass(slots=True)
class _ValueWalk:
    """One `analyse_value` run: FLOPs per guard tuple and the reads, in visit order."""

    loop_vars: frozenset[str]
    terms: dict[tuple[Expr, ...], int] = field(default_factory=dict)
    reads: list[ReadSite] = field(default_factory=list)

    def add(self, n: int, g: tuple[Expr, ...]) -> None:
        if n:
            self.terms[g] = self.terms.get(g, 0) + n

    def charge(self, e: Expr, n: int, g: tuple[Expr, ...]) -> None:
        """``n`` FLOPs for ``e`` unless it is loop-invariant (constant-folded)."""
        if n and not _invariant(e, self.loop_vars):
            self.add(n, g)

    def go(self, e: Expr, g: tuple[Expr, ...]) -> None:
        match e:
            case Access():
                self.reads.append(ReadSite(e, g))
                self.reads.extend(_index_reads(e, g))
            case Cast(operand=o):
                self.go(o, g)
            case Unary(op=op, operand=o):
                self.charge(e, 1 if op == "-" else 0, g)
                self.go(o, g)
            case Binary(op=op, lhs=a, rhs=b):
                self.charge(e, 1 if op in _ARITH | _COMPARE else 0, g)
                self.go(a, g)
                self.go(b, g)
            case Call(func="select", args=(c, a, b)):
                self.select(e, c, a, b, g)
            case Call(func=f, args=args):
                self.charge(e, FUNCTIONS[f][1], g)
                for x in args:
                    self.go(x, g)
            case IntLit() | FloatLit() | BoolLit() | Name():
                pass

    def select(self, e: Expr, c: Expr, a: Expr, b: Expr, g: tuple[Expr, ...]) -> None:
        if is_affine_condition(c, self.loop_vars):
            # Note [Index-only selects]: the condition splits the iteration space, so
            # an implementation evaluates neither it nor the select per point.
            self.go(a, (*g, *_conjuncts(c)))
            self.go(b, (*g, *_conjuncts(negate_condition(c))))
            return
        self.charge(e, 1, g)
        self.go(c, g)
        self.value_select(a, b, g)

    def value_select(self, a: Expr, b: Expr, g: tuple[Expr, ...]) -> None:
        """A value-dependent select: the cheaper branch, and the reads both share."""
        ta, ra = analyse_value(a, self.loop_vars, g)
        tb, rb = analyse_value(b, self.loop_vars, g)
        fa = sum(t.flops for t in ta) if all(t.guards == g for t in ta) else 0
        fb = sum(t.flops for t in tb) if all(t.guards == g for t in tb) else 0
        self.add(min(fa, fb), g)
        shared = {r.access for r in rb}
        self.reads.extend(r for r in ra if r.access in shared)


def flops_per_point(expr: Expr, loop_vars: Sequence[str]) -> int:
    """FLOPs of one evaluation of ``expr`` (all terms, guards ignored).

    >>> from solar.ir import parse_expr as p
    >>> flops_per_point(p("0.5 * H[m, n] * (1.0 + erf(H[m, n] * 0.7071067811865476))"), ["m", "n"])
    5
    >>> flops_per_point(p("X[m, k] * W[n, k]"), ["m", "n", "k"])
    1
    >>> flops_per_point(p("f32(X[2 * i + 1]) + 1.0 / 3.0"), ["i"])
    1
    """
    terms, _ = analyse_value(expr, loop_vars)
    return sum(t.flops for t in terms)


def _strip_casts(e: Expr) -> Expr:
    while isinstance(e, Cast):
        e = e.operand
    return e


def contraction_operands(stmt: Assign | Reduce) -> tuple[Access, Access] | None:
    """The two operands if ``stmt`` is a contraction ``C[..] += A[..] * B[..]``.

    Casts around the operands are allowed. A contraction is tensor-core eligible
    work; every other statement is vector work.

    >>> from solar.ir import parse_program
    >>> p = parse_program('''solar-ir 1
    ... program m
    ... size N = 2
    ... input A : f32[N, N]
    ... output C : f32[N, N]
    ... kernel k { for i in 0 .. N { for j in 0 .. N { C[i, j] = 0.0
    ...   for k in 0 .. N { C[i, j] += A[i, k] * A[k, j] } } } }''')
    >>> stmt = p.kernels[0].body[0].body[0].body[1].body[0]
    >>> [a.tensor for a in contraction_operands(stmt)]
    ['A', 'A']
    """
    if not isinstance(stmt, Reduce) or stmt.op != "+":
        return None
    value = _strip_casts(stmt.value)
    if not (isinstance(value, Binary) and value.op == "*"):
        return None
    a, b = _strip_casts(value.lhs), _strip_casts(value.rhs)
    if isinstance(a, Access) and isinstance(b, Access):
        return a, b
    return None
