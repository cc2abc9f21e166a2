"""Iteration domains and their decomposition into independent clusters.

Contract: plain values and pure helpers. A `Domain` is loops (outermost first,
bounds affine in sizes and outer loop indices) plus affine guards (a
conjunction). `clusters` splits a domain, with optional subscripts, into groups
of loop variables linked by a loop bound, a guard or one subscript: counts of
independent clusters multiply. `canonical_key` names a cluster's structure with
its variables renamed, so equal keys mean equal counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from solar.ir import Binary, Call, Expr, IntLit, Name, Unary, print_expr, walk_exprs
from solar.symbolic import SymExpr, index_symbol, size_symbol, to_sympy

__all__ = [
    "Cluster",
    "Domain",
    "LoopDim",
    "affine_loops",
    "canonical_key",
    "cluster_exprs",
    "clusters",
    "expr_vars",
    "has_index",
    "is_affine",
    "rename_vars",
    "split_conjuncts",
    "split_divmod",
    "sym_inequalities",
]


@dataclass(frozen=True, slots=True)
class LoopDim:
    """One loop of an iteration domain: ``for var in lo .. hi step step``."""

    var: str
    lo: Expr
    hi: Expr
    step: int = 1


@dataclass(frozen=True, slots=True)
class Domain:
    """An iteration domain: loops (outermost first) and affine guards (a conjunction)."""

    loops: tuple[LoopDim, ...]
    guards: tuple[Expr, ...] = ()

    @property
    def vars(self) -> tuple[str, ...]:
        """Loop variables, outermost first."""
        return tuple(loop.var for loop in self.loops)

    def without(self, names: AbstractSet[str]) -> Domain:
        """This domain with the loops over ``names`` dropped (no guard or other loop's
        bound may mention them)."""
        if not names:
            return self
        return Domain(tuple(lp for lp in self.loops if lp.var not in names), self.guards)

    def with_guards(self, extra: Sequence[Expr]) -> Domain:
        """This domain restricted by more guards."""
        if not extra:
            return self
        return Domain(self.loops, (*self.guards, *extra))


def expr_vars(expr: Expr, loop_vars: Iterable[str]) -> frozenset[str]:
    """Loop variables an expression mentions.

    >>> from solar.ir import parse_expr
    >>> sorted(expr_vars(parse_expr("2 * h + r - P"), ["h", "r", "w"]))
    ['h', 'r']
    """
    lv = frozenset(loop_vars)
    return frozenset(e.name for e in walk_exprs(expr) if isinstance(e, Name) and e.name in lv)


def split_conjuncts(cond: Expr) -> tuple[Expr, ...]:
    """Split ``a and b and c`` into its conjuncts.

    >>> from solar.ir import parse_expr
    >>> len(split_conjuncts(parse_expr("0 <= h and h < H and r < 3")))
    3
    """
    if isinstance(cond, Binary) and cond.op == "and":
        return (*split_conjuncts(cond.lhs), *split_conjuncts(cond.rhs))
    return (cond,)


@dataclass(frozen=True, slots=True)
class Cluster:
    """Loops, guards and subscripts of one independent group of loop variables."""

    loops: tuple[LoopDim, ...]
    guards: tuple[Expr, ...]
    dims: tuple[Expr, ...]


def cluster_exprs(cl: Cluster) -> Iterable[Expr]:
    for lp in cl.loops:
        yield lp.lo
        yield lp.hi
    yield from cl.guards
    yield from cl.dims


def clusters(domain: Domain, dims: tuple[Expr, ...]) -> list[Cluster]:
    """Split a domain (and subscripts) into independent clusters of loop variables."""
    vs = domain.vars
    parent = {v: v for v in vs}

    def find(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    def union(group: Iterable[str]) -> None:
        items = list(group)
        for other in items[1:]:
            a, b = find(items[0]), find(other)
            if a != b:
                parent[b] = a

    for lp in domain.loops:
        union([lp.var, *sorted(expr_vars(lp.lo, vs) | expr_vars(lp.hi, vs))])
    guard_vars = [(g, expr_vars(g, vs)) for g in domain.guards]
    dim_vars = [(d, expr_vars(d, vs)) for d in dims]
    for _, gv in (*guard_vars, *dim_vars):
        union(sorted(gv))
    roots = list(dict.fromkeys(find(v) for v in vs))
    out = []
    for root in roots:
        members = {v for v in vs if find(v) == root}
        out.append(
            Cluster(
                tuple(lp for lp in domain.loops if lp.var in members),
                tuple(g for g, gv in guard_vars if gv and gv <= members),
                tuple(d for d, dv in dim_vars if dv and dv <= members),
            )
        )
    const_guards = tuple(g for g, gv in guard_vars if not gv)
    if const_guards:
        out.append(Cluster((), const_guards, ()))
    return out


def rename_vars(expr: Expr, mapping: Mapping[str, str]) -> Expr:
    match expr:
        case Name(name=n) if n in mapping:
            return Name(mapping[n])
        case Binary(op=op, lhs=a, rhs=b):
            return Binary(op, rename_vars(a, mapping), rename_vars(b, mapping))
        case Unary(op=op, operand=o):
            return Unary(op, rename_vars(o, mapping))
        case Call(func=f, args=args):
            return Call(f, tuple(rename_vars(a, mapping) for a in args))
        case _:
            return expr


def canonical_key(kind: str, cl: Cluster) -> str:
    """The cluster's structure as text, loop variables renamed ``%0``, ``%1``... in order."""
    mapping = {lp.var: f"%{i}" for i, lp in enumerate(cl.loops)}

    def text(e: Expr) -> str:
        return print_expr(rename_vars(e, mapping))

    loops = ";".join(f"{text(lp.lo)}:{text(lp.hi)}:{lp.step}" for lp in cl.loops)
    guards = ";".join(text(g) for g in cl.guards)
    dims = ";".join(text(d) for d in cl.dims)
    return f"{kind}|{loops}|{guards}|{dims}"


def affine_loops(
    loops: Sequence[LoopDim],
) -> tuple[list[SymExpr], list[SymExpr], list[SymExpr]] | None:
    """Index symbols and sympy bounds of loops, if every bound is affine."""
    vs = [lp.var for lp in loops]
    syms = [index_symbol(v) for v in vs]
    try:
        los = [to_sympy(lp.lo, indices=vs) for lp in loops]
        his = [to_sympy(lp.hi, indices=vs) for lp in loops]
    except ValueError:
        return None
    if not all(is_affine(e, syms) for e in (*los, *his)):
        return None
    return syms, los, his


def has_index(e: SymExpr) -> bool:
    return any(str(s).startswith("_i_") for s in e.free_symbols)


def is_affine(e: SymExpr, syms: Sequence[SymExpr]) -> bool:
    present = [s for s in syms if s in e.free_symbols]
    if not present:
        return True
    if not e.is_polynomial(*present):
        return False
    return all(e.diff(s).free_symbols.isdisjoint(present) for s in present)


def sym_inequalities(g: Expr, vs: Sequence[str]) -> list[SymExpr] | None:
    """A comparison guard as expressions ``e >= 0`` (None: not a comparison)."""
    if not isinstance(g, Binary) or g.op not in ("<", "<=", ">", ">=", "=="):
        return None
    try:
        a, b = to_sympy(g.lhs, indices=vs), to_sympy(g.rhs, indices=vs)
    except ValueError:
        return None
    match g.op:
        case "<":
            return [b - a - 1]
        case "<=":
            return [b - a]
        case ">":
            return [a - b - 1]
        case ">=":
            return [a - b]
        case _:
            return [b - a, a - b]


def _split_sub(e: Expr, v: str, d: int, q: Name, r: Name) -> Expr:
    """Rewrite ``v // d`` to ``q``, ``v % d`` to ``r`` and ``v`` to ``d * q + r``."""
    match e:
        case Binary(op="//", lhs=Name(name=name), rhs=IntLit(value=k)) if name == v and k == d:
            return q
        case Binary(op="%", lhs=Name(name=name), rhs=IntLit(value=k)) if name == v and k == d:
            return r
        case Name(name=name) if name == v:
            return Binary("+", Binary("*", IntLit(d), q), r)
        case Binary(op=op, lhs=a, rhs=b):
            return Binary(op, _split_sub(a, v, d, q, r), _split_sub(b, v, d, q, r))
        case Unary(op=op, operand=o):
            return Unary(op, _split_sub(o, v, d, q, r))
        case Call(func=f, args=args):
            return Call(f, tuple(_split_sub(a, v, d, q, r) for a in args))
        case _:
            return e


def split_divmod(cl: Cluster, definitions: Mapping[str, SymExpr]) -> Cluster:
    """Replace a variable used only as ``v // d`` / ``v % d`` / ``v`` in subscripts by two.

    ``for v in 0 .. m * d`` becomes ``v.q in 0 .. m`` and ``v.r in 0 .. d`` with
    ``v = d * v.q + v.r`` (a bijection), so reshapes become affine.
    """
    vs = [lp.var for lp in cl.loops]
    loops = list(cl.loops)
    dims = list(cl.dims)
    for lp in cl.loops:
        v = lp.var
        if lp.step != 1 or lp.lo != IntLit(0):
            continue
        if any(v in expr_vars(g, vs) for g in cl.guards):
            continue
        if any(v in expr_vars(o.lo, vs) | expr_vars(o.hi, vs) for o in cl.loops):
            continue
        divisors = {
            e.rhs.value
            for d in dims
            for e in walk_exprs(d)
            if isinstance(e, Binary) and e.op in ("//", "%") and e.lhs == Name(v)
            and isinstance(e.rhs, IntLit) and e.rhs.value > 1
        }
        if len(divisors) != 1:
            continue
        (d,) = divisors
        try:
            hi = to_sympy(lp.hi)
        except ValueError:
            continue
        subs = {size_symbol(n): e for n, e in definitions.items()}
        if not (hi.xreplace(subs) / d).is_integer:
            continue
        q, r = Name(f"{v}.q"), Name(f"{v}.r")

        dims = [_split_sub(e, v, d, q, r) for e in dims]
        i = loops.index(lp)
        loops[i : i + 1] = [
            LoopDim(q.name, IntLit(0), Binary("//", lp.hi, IntLit(d))),
            LoopDim(r.name, IntLit(0), IntLit(d)),
        ]
    return Cluster(tuple(loops), cl.guards, tuple(dims))


