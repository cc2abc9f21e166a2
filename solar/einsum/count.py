"""Counts of executed iteration points and of index-map images, exact or provably lower.

Contract: ``(Domain[, subscripts]) -> Count``. A `Count` is "symbolic until
evaluated": a sympy expression over size symbols and opaque count symbols
(``q0``, ``q1``...), each opaque symbol standing for a `DeferredCount` that is
evaluated numerically at a size binding. Every count is EXACT or a LOWER bound,
never more (see docs/bounds.md, "Counting").

Method (Note [Cluster counting]): the loop variables of a domain are split into
independent clusters (variables linked by a loop bound, a guard or, for images,
one subscript). The count is the product of the clusters' counts. A cluster is
counted in closed form where one exists: products of trip counts, nested
summations of affine trip counts (triangles, after folding `j <= i`-style guards
into loop bounds), and images of injective subscript maps (full-rank integer
maps, mixed-radix linearisations like ``g * Fg + f``, and ``//``/``%`` splits).
Otherwise the cluster becomes a `DeferredCount`: at a binding it enumerates the
cluster's outer variables (vectorised numpy) and counts the innermost variable in
closed form (a union of arithmetic progressions per outer point). Past
`ENUMERATION_LIMIT` outer points it stops, and the count of what it saw is a
lower bound (a subset's image is a subset of the image).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from solar.ir import Binary, BoolLit, Call, Expr, IntLit, Name, Unary, print_expr
from solar.ir.traversal import walk_exprs
from solar.symbolic import (
    SymExpr,
    ceiling,
    count_symbol,
    evaluate,
    has_unevaluated_sum,
    index_symbol,
    integer,
    is_known_leq,
    size_symbol,
    smax,
    smin,
    summation,
    sym_to_str,
    to_sympy,
)

__all__ = [
    "ENUMERATION_LIMIT",
    "Count",
    "CountContext",
    "DeferredCount",
    "Domain",
    "LoopDim",
    "expr_vars",
    "split_conjuncts",
]

ENUMERATION_LIMIT = 2_000_000
"""Most outer points a deferred count enumerates before it returns a lower bound."""

_INT = np.int64


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


# --------------------------------------------------------------------------- counts


@dataclass(frozen=True, slots=True, eq=False)
class DeferredCount:
    """A cluster count with no closed form, evaluated numerically per size binding.

    Attributes:
        name: the opaque symbol standing for it in `Count.expr` (``q0``...).
        kind: ``points`` (executed points) or ``image`` (distinct subscript tuples).
        loops: the cluster's loops, outermost first.
        guards: the cluster's guards.
        dims: the cluster's subscripts (``image`` only).
        key: canonical structure (variables renamed); equal keys, equal counts.
        sizes: the size names it depends on.
    """

    name: str
    kind: Literal["points", "image"]
    loops: tuple[LoopDim, ...]
    guards: tuple[Expr, ...]
    dims: tuple[Expr, ...]
    key: str
    sizes: tuple[str, ...]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeferredCount) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def description(self) -> str:
        """Set-builder text, e.g. ``#{(ho, r) | 0 <= ho < Ho, 0 <= r < 3, ...}``."""
        vs = ", ".join(loop.var for loop in self.loops)
        parts = [
            f"{print_expr(lp.lo)} <= {lp.var} < {print_expr(lp.hi)}"
            + (f" step {lp.step}" if lp.step != 1 else "")
            for lp in self.loops
        ]
        parts += [print_expr(g) for g in self.guards]
        if self.kind == "points":
            return f"#{{({vs}) | {', '.join(parts)}}}"
        dims = ", ".join(print_expr(d) for d in self.dims)
        return f"#{{({dims}) | {', '.join(parts)}}}"

    def evaluate(self, sizes: Mapping[str, int]) -> tuple[int, bool]:
        """Return ``(count, exact)`` at a full size binding (derived sizes included).

        ``exact`` is False when the enumeration limit was hit (the count is then a
        lower bound).

        Raises:
            KeyError: a size it depends on is not bound.
        """
        return _evaluate_deferred(self, tuple(int(sizes[n]) for n in self.sizes))


@functools.lru_cache(maxsize=1 << 16)
def _evaluate_deferred(dc: DeferredCount, values: tuple[int, ...]) -> tuple[int, bool]:
    env = dict(zip(dc.sizes, values, strict=True))
    if dc.kind == "points":
        return _count_points_numeric(dc.loops, dc.guards, env, ENUMERATION_LIMIT)
    return _count_image_numeric(dc.loops, dc.guards, dc.dims, env, ENUMERATION_LIMIT)


@dataclass(frozen=True, slots=True)
class Count:
    """A non-negative count that evaluates at any size binding.

    Attributes:
        expr: sympy expression over size symbols and the deferred counts' symbols.
        deferred: the deferred counts ``expr`` mentions.
        exact: False where the count is a deliberate lower bound (a union taken as
            a max, a gather's table, a value-dependent branch).
    """

    expr: SymExpr
    deferred: tuple[DeferredCount, ...] = ()
    exact: bool = True

    @staticmethod
    def of(value: int | SymExpr, *, exact: bool = True) -> Count:
        """A count with a closed form.

        >>> Count.of(3).formula
        '3'
        """
        return Count(integer(value) if isinstance(value, int) else value, (), exact)

    def _merge(self, other: Count) -> tuple[DeferredCount, ...]:
        if not other.deferred:
            return self.deferred
        seen = {d.name for d in self.deferred}
        return self.deferred + tuple(d for d in other.deferred if d.name not in seen)

    def __add__(self, other: Count) -> Count:
        return Count(self.expr + other.expr, self._merge(other), self.exact and other.exact)

    def __sub__(self, other: Count) -> Count:
        return Count(self.expr - other.expr, self._merge(other), self.exact and other.exact)

    def __mul__(self, other: Count | int) -> Count:
        if isinstance(other, int):
            return Count(self.expr * other, self.deferred, self.exact)
        return Count(self.expr * other.expr, self._merge(other), self.exact and other.exact)

    __rmul__ = __mul__

    def maximum(self, other: Count, *, exact: bool | None = None) -> Count:
        """``max(self, other)``; ``exact`` defaults to both being exact."""
        ex = (self.exact and other.exact) if exact is None else exact
        return Count(smax(self.expr, other.expr), self._merge(other), ex)

    def clamp0(self) -> Count:
        """``max(0, self)``."""
        return Count(smax(0, self.expr), self.deferred, self.exact)

    @property
    def is_zero(self) -> bool:
        """True if the count is identically zero."""
        return bool(self.expr == 0)

    @property
    def formula(self) -> str:
        """The symbolic form as text (deferred counts appear by name)."""
        return sym_to_str(self.expr)

    @property
    def definitions(self) -> tuple[str, ...]:
        """``q0 = #{...}`` lines for the deferred counts in `formula`."""
        return tuple(f"{d.name} = {d.description}" for d in self.deferred)

    def evaluate(self, sizes: Mapping[str, int]) -> float:
        """Evaluate at a full size binding (free and derived sizes).

        Raises:
            ValueError: a size the count depends on is unbound.

        >>> Count.of(size_symbol("M") * 2).evaluate({"M": 5})
        10.0
        """
        bindings: dict[str, int | float] = dict(sizes)
        try:
            for d in self.deferred:
                bindings[d.name] = d.evaluate(sizes)[0]
        except KeyError as err:
            raise ValueError(f"unbound sizes: {err.args[0]}") from None
        return evaluate(self.expr, bindings)


ZERO = Count.of(0)


# --------------------------------------------------------------------------- context


@dataclass(frozen=True, slots=True)
class _Cluster:
    loops: tuple[LoopDim, ...]
    guards: tuple[Expr, ...]
    dims: tuple[Expr, ...]


@dataclass
class CountContext:
    """Lift-time counter: creates deferred counts and memoises cluster counts by structure.

    Args:
        definitions: derived sizes as expressions of free sizes (used in proofs only).
    """

    definitions: Mapping[str, SymExpr] = field(default_factory=dict)
    _deferred: dict[str, DeferredCount] = field(default_factory=dict)
    _memo: dict[str, Count] = field(default_factory=dict)
    _calls: dict[tuple[Domain, tuple[Expr, ...]], tuple[Count, str]] = field(
        default_factory=dict
    )

    def points(self, domain: Domain) -> Count:
        """Number of points of ``domain`` that satisfy its guards."""
        key = (domain, (BoolLit(True),))
        if key not in self._calls:
            out = Count.of(1)
            for cl in _clusters(domain, ()):
                out = out * self._cluster_points(cl)
            self._calls[key] = (out, "")
        return self._calls[key][0]

    def image(self, domain: Domain, dims: Sequence[Expr]) -> tuple[Count, str]:
        """Number of distinct subscript tuples ``dims`` over ``domain``, and a canonical key.

        Subscripts must be integer expressions of loop variables and sizes (drop
        indirect subscripts before calling: the projection is a lower bound).
        """
        key = (domain, tuple(dims))
        if key not in self._calls:
            out = Count.of(1)
            for cl in _clusters(domain, key[1]):
                out = out * (self._cluster_image(cl) if cl.dims else self._nonempty(cl))
            self._calls[key] = (
                out, _canonical_key("image", _Cluster(domain.loops, domain.guards, key[1]))
            )
        return self._calls[key]

    # -- clusters

    def _cluster_points(self, cl: _Cluster) -> Count:
        key = _canonical_key("points", _Cluster(cl.loops, cl.guards, ()))
        if key not in self._memo:
            closed = self._closed_points(cl.loops, cl.guards)
            self._memo[key] = Count.of(closed) if closed is not None else self._defer(
                "points", _Cluster(cl.loops, cl.guards, ()), key
            )
        return self._memo[key]

    def _nonempty(self, cl: _Cluster) -> Count:
        pts = self._cluster_points(cl)
        if self._nonneg(pts.expr - 1):
            return Count.of(1)
        return Count(smin(1, pts.expr), pts.deferred, pts.exact)

    def _cluster_image(self, cl: _Cluster) -> Count:
        key = _canonical_key("image", cl)
        if key not in self._memo:
            split = _split_divmod(cl, self.definitions)
            if self._injective(split):
                self._memo[key] = self._cluster_points(cl)
            else:
                projected = self._project(cl)
                self._memo[key] = (
                    projected if projected is not None else self._defer("image", cl, key)
                )
        return self._memo[key]

    def _project(self, cl: _Cluster) -> Count | None:
        """Closed forms for projections (Note [Projections]); guards folded first.

        (a) An innermost loop that no subscript mentions, with a provably non-empty
        (guard-folded) range at every outer point, does not change the image: drop
        it with the guards it absorbed.
        (b) ``T[v]`` for the innermost ``v`` in ``lo .. hi(outer)`` over rectangular,
        non-empty outer loops: nested intervals, so the image is ``max(hi) - lo``
        (or ``hi - min(lo)`` when ``hi`` is fixed).
        """
        vs = [lp.var for lp in cl.loops]
        folded = self._fold(cl.loops, cl.guards)
        if folded is None:
            return None
        _, chosen, box, owners = folded
        used = set().union(*(expr_vars(d, vs) for d in cl.dims))
        n = len(cl.loops)
        while n > 1 and vs[n - 1] not in used:
            lo, hi = chosen[n - 1]
            trip = self._extreme(hi - lo, box, largest=False)
            if trip is None or not self._nonneg(trip - 1):
                break
            n -= 1
        if n < len(cl.loops):
            if any(min(o) < n <= max(o) for o in owners if o):
                return None  # a guard bounds both a kept and a dropped variable
            guards = tuple(g for g, o in zip(cl.guards, owners, strict=True) if max(o) < n)
            if any(not expr_vars(g, vs) <= set(vs[:n]) for g in guards):
                return None
            return self.image(Domain(cl.loops[:n], guards), cl.dims)[0]
        if cl.dims != (Name(vs[-1]),):
            return None
        for lo, hi in chosen[:-1]:
            if _has_index(lo) or _has_index(hi) or not self._nonneg(hi - lo - 1):
                return None
        lo, hi = chosen[-1]
        if not _has_index(lo):
            top = self._extreme(hi, box, largest=True)
            return None if top is None else Count.of(smax(0, top - lo))
        if not _has_index(hi):
            bottom = self._extreme(lo, box, largest=False)
            return None if bottom is None else Count.of(smax(0, hi - bottom))
        return None

    def _box(
        self, syms: Sequence[SymExpr], los: Sequence[SymExpr], his: Sequence[SymExpr]
    ) -> dict[SymExpr, tuple[SymExpr, SymExpr]]:
        """Ranges ``[lo, hi)`` of each variable over all outer points (a superset)."""
        box: dict[SymExpr, tuple[SymExpr, SymExpr]] = {}
        for s, lo, hi in zip(syms, los, his, strict=True):
            lo_box = self._extreme(lo, box, largest=False)
            hi_box = self._extreme(hi, box, largest=True)
            if lo_box is not None and hi_box is not None:
                box[s] = (lo_box, hi_box)
        return box

    def _defer(self, kind: Literal["points", "image"], cl: _Cluster, key: str) -> Count:
        dc = self._deferred.get(key)
        if dc is None:
            names: set[str] = set()
            vs = {lp.var for lp in cl.loops}
            for e in _cluster_exprs(cl):
                names |= {x.name for x in walk_exprs(e) if isinstance(x, Name) and x.name not in vs}
            dc = DeferredCount(
                f"q{len(self._deferred)}", kind, cl.loops, cl.guards, cl.dims, key,
                tuple(sorted(names)),
            )
            self._deferred[key] = dc
        return Count(count_symbol(dc.name), (dc,), True)

    # -- proofs

    def _nonneg(self, expr: SymExpr) -> bool:
        """True only if ``expr >= 0`` is provable for every positive size binding."""
        if expr.is_nonnegative:
            return True
        if self.definitions:
            subs = {size_symbol(n): v for n, v in self.definitions.items()}
            expr = expr.xreplace(subs)
            if expr.is_nonnegative:
                return True
        if expr.is_nonnegative is False:
            return False
        return is_known_leq(0, expr)

    # -- closed forms

    def _closed_points(
        self, loops: tuple[LoopDim, ...], guards: tuple[Expr, ...]
    ) -> SymExpr | None:
        """Closed form of the number of guarded points, or None (see module docstring)."""
        if not loops:
            return None if guards else integer(1)
        vs = [lp.var for lp in loops]
        if any(lp.step != 1 for lp in loops):
            aff = _affine_loops(loops)
            if aff is None or len(loops) != 1 or guards or _has_index(aff[1][0]):
                return None
            return smax(0, ceiling((aff[2][0] - aff[1][0]) / loops[0].step))
        folded = self._fold(loops, guards)
        if folded is None:
            return None
        syms, chosen, box, _ = folded
        expr: SymExpr = integer(1)
        for i in reversed(range(len(syms))):
            lo, hi = chosen[i]
            trip_min = self._extreme(hi - lo, box, largest=False)
            if trip_min is None or not self._nonneg(trip_min):
                hi = smax(lo, hi)
            expr = summation(expr, vs[i], lo, hi)
        if has_unevaluated_sum(expr) or (expr.free_symbols & set(syms)):
            return None
        return expr.expand()

    def _fold(
        self, loops: Sequence[LoopDim], guards: Sequence[Expr]
    ) -> tuple[list[SymExpr], list[tuple[SymExpr, SymExpr]],
               dict[SymExpr, tuple[SymExpr, SymExpr]], list[set[int]]] | None:
        """Fold affine guards into loop bounds (Note [Guard folding]).

        A guard ``+-v + rest >= 0`` bounds its innermost variable ``v``; of several
        candidate bounds the one that provably dominates over the box of outer
        variables is kept. Returns index symbols, ``(lo, hi)`` per variable, the box
        and, per guard, the variables it was folded into; or None when a guard is not
        of that form or no bound dominates.
        """
        vs = [lp.var for lp in loops]
        aff = _affine_loops(loops)
        if aff is None or any(lp.step != 1 for lp in loops):
            return None
        syms, los, his = aff
        lo_c: list[list[SymExpr]] = [[e] for e in los]
        hi_c: list[list[SymExpr]] = [[e] for e in his]
        owners: list[set[int]] = []
        for g in guards:
            ineqs = _sym_inequalities(g, vs)
            if ineqs is None:
                return None
            owners.append(set())
            for e in ineqs:
                if not _is_affine(e, syms):
                    return None
                pos = [i for i, s in enumerate(syms) if e.coeff(s) != 0]
                if not pos:
                    return None
                i = pos[-1]
                owners[-1].add(i)
                c = e.coeff(syms[i])
                if c == 1:
                    lo_c[i].append(-(e - syms[i]))
                elif c == -1:
                    hi_c[i].append(e + syms[i] + 1)
                else:
                    return None
        box: dict[SymExpr, tuple[SymExpr, SymExpr]] = {}
        chosen: list[tuple[SymExpr, SymExpr]] = []
        for i, s in enumerate(syms):
            lo = self._pick(lo_c[i], box, largest=True)
            hi = self._pick(hi_c[i], box, largest=False)
            if lo is None or hi is None:
                return None
            chosen.append((lo, hi))
            lo_box = self._extreme(lo, box, largest=False)
            hi_box = self._extreme(hi, box, largest=True)
            if lo_box is not None and hi_box is not None:
                box[s] = (lo_box, hi_box)
        return syms, chosen, box, owners

    def _extreme(
        self, e: SymExpr, box: Mapping[SymExpr, tuple[SymExpr, SymExpr]], *, largest: bool
    ) -> SymExpr | None:
        """Min or max of an affine ``e`` over the box of outer variables (None: unknown)."""
        out = e
        for s in e.free_symbols:
            if not str(s).startswith("_i_"):
                continue
            if s not in box:
                return None
            c = e.coeff(s)
            if not c.is_number:
                return None
            lo, hi = box[s]
            pick_hi = bool(c > 0) == largest
            out = out.xreplace({s: (hi - 1) if pick_hi else lo})
        return out

    def _pick(
        self, cands: list[SymExpr], box: Mapping[SymExpr, tuple[SymExpr, SymExpr]], *,
        largest: bool,
    ) -> SymExpr | None:
        """The candidate that dominates all others over the box (max for lower bounds)."""
        uniq = list(dict.fromkeys(cands))
        if len(uniq) == 1:
            return uniq[0]
        for i, c in enumerate(uniq):
            ok = True
            for j, o in enumerate(uniq):
                if i == j:
                    continue
                d = self._extreme(c - o if largest else o - c, box, largest=False)
                if d is None or not self._nonneg(d):
                    ok = False
                    break
            if ok:
                return c
        if all(not (c.free_symbols & set(box)) and not _has_index(c) for c in uniq):
            out = uniq[0]
            for c in uniq[1:]:
                out = smax(out, c) if largest else smin(out, c)
            return out
        return None

    def _injective(self, cl: _Cluster) -> bool:
        """True if the subscript map is injective on the cluster's box (provably)."""
        vs = [lp.var for lp in cl.loops]
        syms = [index_symbol(v) for v in vs]
        try:
            dims = [to_sympy(d, indices=vs) for d in cl.dims]
        except ValueError:
            return False
        if not all(_is_affine(d, syms) for d in dims):
            return False
        coeffs = [[d.coeff(s) for s in syms] for d in dims]
        if all(c.is_Integer for row in coeffs for c in row):
            mat = np.array([[int(c) for c in row] for row in coeffs], dtype=float)
            if len(dims) and np.linalg.matrix_rank(mat) == len(syms):
                return True
        # Mixed radix: each variable in exactly one subscript, and within a subscript the
        # coefficients dominate the span of the smaller digits.
        owner: dict[int, int] = {}
        for di, row in enumerate(coeffs):
            for vi, c in enumerate(row):
                if c != 0:
                    if vi in owner:
                        return False
                    owner[vi] = di
        if len(owner) != len(syms):
            return False
        extents: list[SymExpr] = []
        for lp in cl.loops:
            if lp.step != 1:
                return False
            try:
                lo, hi = to_sympy(lp.lo, indices=vs), to_sympy(lp.hi, indices=vs)
            except ValueError:
                return False
            if _has_index(lo) or _has_index(hi):
                return False
            extents.append(hi - lo)
        for di in range(len(dims)):
            members = [vi for vi, d in owner.items() if d == di]
            if not self._mixed_radix([coeffs[di][vi] for vi in members],
                                     [extents[vi] for vi in members]):
                return False
        return True

    def _mixed_radix(self, coeffs: list[SymExpr], extents: list[SymExpr]) -> bool:
        if len(coeffs) == 1:
            return bool(coeffs[0].is_nonzero)
        if not all(c.is_positive for c in coeffs) or len(coeffs) > 5:
            return False
        for order in itertools.permutations(range(len(coeffs))):
            span: SymExpr = integer(0)
            ok = True
            for k in order:
                if not self._nonneg(coeffs[k] - span - 1):
                    ok = False
                    break
                span = span + coeffs[k] * (extents[k] - 1)
            if ok:
                return True
        return False


# --------------------------------------------------------------------------- structure


def _cluster_exprs(cl: _Cluster) -> Iterable[Expr]:
    for lp in cl.loops:
        yield lp.lo
        yield lp.hi
    yield from cl.guards
    yield from cl.dims


def _clusters(domain: Domain, dims: tuple[Expr, ...]) -> list[_Cluster]:
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
            _Cluster(
                tuple(lp for lp in domain.loops if lp.var in members),
                tuple(g for g, gv in guard_vars if gv and gv <= members),
                tuple(d for d, dv in dim_vars if dv and dv <= members),
            )
        )
    const_guards = tuple(g for g, gv in guard_vars if not gv)
    if const_guards:
        out.append(_Cluster((), const_guards, ()))
    return out


def _rename(expr: Expr, mapping: Mapping[str, str]) -> Expr:
    match expr:
        case Name(name=n) if n in mapping:
            return Name(mapping[n])
        case Binary(op=op, lhs=a, rhs=b):
            return Binary(op, _rename(a, mapping), _rename(b, mapping))
        case Unary(op=op, operand=o):
            return Unary(op, _rename(o, mapping))
        case Call(func=f, args=args):
            return Call(f, tuple(_rename(a, mapping) for a in args))
        case _:
            return expr


def _canonical_key(kind: str, cl: _Cluster) -> str:
    mapping = {lp.var: f"%{i}" for i, lp in enumerate(cl.loops)}
    loops = ";".join(
        f"{print_expr(_rename(lp.lo, mapping))}:{print_expr(_rename(lp.hi, mapping))}:{lp.step}"
        for lp in cl.loops
    )
    guards = ";".join(print_expr(_rename(g, mapping)) for g in cl.guards)
    dims = ";".join(print_expr(_rename(d, mapping)) for d in cl.dims)
    return f"{kind}|{loops}|{guards}|{dims}"


def _affine_loops(
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
    if not all(_is_affine(e, syms) for e in (*los, *his)):
        return None
    return syms, los, his


def _has_index(e: SymExpr) -> bool:
    return any(str(s).startswith("_i_") for s in e.free_symbols)


def _is_affine(e: SymExpr, syms: Sequence[SymExpr]) -> bool:
    present = [s for s in syms if s in e.free_symbols]
    if not present:
        return True
    if not e.is_polynomial(*present):
        return False
    return all(e.diff(s).free_symbols.isdisjoint(present) for s in present)


def _sym_inequalities(g: Expr, vs: Sequence[str]) -> list[SymExpr] | None:
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


def _split_divmod(cl: _Cluster, definitions: Mapping[str, SymExpr]) -> _Cluster:
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

        def sub(e: Expr, v: str = v, d: int = d, q: Name = q, r: Name = r) -> Expr:
            match e:
                case Binary(op="//", lhs=Name(name=n), rhs=IntLit(value=k)) if n == v and k == d:
                    return q
                case Binary(op="%", lhs=Name(name=n), rhs=IntLit(value=k)) if n == v and k == d:
                    return r
                case Name(name=n) if n == v:
                    return Binary("+", Binary("*", IntLit(d), q), r)
                case Binary(op=op, lhs=a, rhs=b):
                    return Binary(op, sub(a), sub(b))
                case Unary(op=op, operand=o):
                    return Unary(op, sub(o))
                case Call(func=f, args=args):
                    return Call(f, tuple(sub(a) for a in args))
                case _:
                    return e

        dims = [sub(e) for e in dims]
        i = loops.index(lp)
        loops[i : i + 1] = [
            LoopDim(q.name, IntLit(0), Binary("//", lp.hi, IntLit(d))),
            LoopDim(r.name, IntLit(0), IntLit(d)),
        ]
    return _Cluster(tuple(loops), cl.guards, tuple(dims))


# --------------------------------------------------------------------------- numeric


def _veval(expr: Expr, env: Mapping[str, object]) -> object:
    """Evaluate an integer/boolean IR expression over numpy arrays (floor semantics)."""
    match expr:
        case IntLit(value=v):
            return v
        case BoolLit(value=v):
            return v
        case Name(name=n):
            return env[n]
        case Unary(op="-", operand=o):
            return -_veval(o, env)  # type: ignore[operator]
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


def _arr(value: object, n: int) -> np.ndarray:
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


def _count_points_numeric(
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


def _count_image_numeric(
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

