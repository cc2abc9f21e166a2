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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from solar.einsum.domain import (
    Cluster,
    Domain,
    LoopDim,
    affine_loops,
    canonical_key,
    cluster_exprs,
    clusters,
    expr_vars,
    has_index,
    is_affine,
    split_conjuncts,
    split_divmod,
    sym_inequalities,
)
from solar.einsum.enumeration import (
    ENUMERATION_LIMIT,
    count_image_numeric,
    count_points_numeric,
)
from solar.ir import BoolLit, Expr, Name, print_expr
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
        return count_points_numeric(dc.loops, dc.guards, env, ENUMERATION_LIMIT)
    return count_image_numeric(dc.loops, dc.guards, dc.dims, env, ENUMERATION_LIMIT)


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
            for cl in clusters(domain, ()):
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
            for cl in clusters(domain, key[1]):
                out = out * (self._cluster_image(cl) if cl.dims else self._nonempty(cl))
            self._calls[key] = (
                out, canonical_key("image", Cluster(domain.loops, domain.guards, key[1]))
            )
        return self._calls[key]

    # -- clusters

    def _cluster_points(self, cl: Cluster) -> Count:
        key = canonical_key("points", Cluster(cl.loops, cl.guards, ()))
        if key not in self._memo:
            closed = self._closed_points(cl.loops, cl.guards)
            self._memo[key] = Count.of(closed) if closed is not None else self._defer(
                "points", Cluster(cl.loops, cl.guards, ()), key
            )
        return self._memo[key]

    def _nonempty(self, cl: Cluster) -> Count:
        pts = self._cluster_points(cl)
        if self._nonneg(pts.expr - 1):
            return Count.of(1)
        return Count(smin(1, pts.expr), pts.deferred, pts.exact)

    def _cluster_image(self, cl: Cluster) -> Count:
        key = canonical_key("image", cl)
        if key not in self._memo:
            split = split_divmod(cl, self.definitions)
            if self._injective(split):
                self._memo[key] = self._cluster_points(cl)
            else:
                projected = self._project(cl)
                self._memo[key] = (
                    projected if projected is not None else self._defer("image", cl, key)
                )
        return self._memo[key]

    def _project(self, cl: Cluster) -> Count | None:
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
            if has_index(lo) or has_index(hi) or not self._nonneg(hi - lo - 1):
                return None
        lo, hi = chosen[-1]
        if not has_index(lo):
            top = self._extreme(hi, box, largest=True)
            return None if top is None else Count.of(smax(0, top - lo))
        if not has_index(hi):
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

    def _defer(self, kind: Literal["points", "image"], cl: Cluster, key: str) -> Count:
        dc = self._deferred.get(key)
        if dc is None:
            names: set[str] = set()
            vs = {lp.var for lp in cl.loops}
            for e in cluster_exprs(cl):
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
            aff = affine_loops(loops)
            if aff is None or len(loops) != 1 or guards or has_index(aff[1][0]):
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
        aff = affine_loops(loops)
        if aff is None or any(lp.step != 1 for lp in loops):
            return None
        syms, los, his = aff
        lo_c: list[list[SymExpr]] = [[e] for e in los]
        hi_c: list[list[SymExpr]] = [[e] for e in his]
        owners: list[set[int]] = []
        for g in guards:
            ineqs = sym_inequalities(g, vs)
            if ineqs is None:
                return None
            owners.append(set())
            for e in ineqs:
                if not is_affine(e, syms):
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
        if all(not (c.free_symbols & set(box)) and not has_index(c) for c in uniq):
            out = uniq[0]
            for c in uniq[1:]:
                out = smax(out, c) if largest else smin(out, c)
            return out
        return None

    def _injective(self, cl: Cluster) -> bool:
        """True if the subscript map is injective on the cluster's box (provably)."""
        vs = [lp.var for lp in cl.loops]
        syms = [index_symbol(v) for v in vs]
        try:
            dims = [to_sympy(d, indices=vs) for d in cl.dims]
        except ValueError:
            return False
        if not all(is_affine(d, syms) for d in dims):
            return False
        coeffs = [[d.coeff(s) for s in syms] for d in dims]
        if all(c.is_Integer for row in coeffs for c in row):
            mat = np.array([[int(c) for c in row] for row in coeffs], dtype=float)
            if len(dims) and np.linalg.matrix_rank(mat) == len(syms):
                return True
        return self._mixed_radix_map(cl, coeffs)

    def _mixed_radix_map(self, cl: Cluster, coeffs: list[list[SymExpr]]) -> bool:
        """Each variable in exactly one subscript, each subscript a mixed-radix number."""
        vs = [lp.var for lp in cl.loops]
        owner: dict[int, int] = {}
        for di, row in enumerate(coeffs):
            for vi, c in enumerate(row):
                if c != 0:
                    if vi in owner:
                        return False
                    owner[vi] = di
        if len(owner) != len(vs):
            return False
        extents: list[SymExpr] = []
        for lp in cl.loops:
            if lp.step != 1:
                return False
            try:
                lo, hi = to_sympy(lp.lo, indices=vs), to_sympy(lp.hi, indices=vs)
            except ValueError:
                return False
            if has_index(lo) or has_index(hi):
                return False
            extents.append(hi - lo)
        for di in range(len(coeffs)):
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


