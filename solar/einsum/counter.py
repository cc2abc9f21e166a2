"""Counting: executed iteration points and index-map images, exact or provably lower.

Contract: ``(Domain[, subscripts]) -> Count`` through `CountContext`, which memoises
by structure and names the deferred counts it creates (``q0``, ``q1``...), so one
context serves one lift. Every count is EXACT or a LOWER bound, never more (see
docs/bounds.md, "Counting").

Method (Note [Cluster counting]): the loop variables of a domain are split into
independent clusters (variables linked by a loop bound, a guard or, for images,
one subscript). The count is the product of the clusters' counts. A cluster is
counted in closed form where one exists: products of trip counts, nested
summations of affine trip counts (triangles, after folding `j <= i`-style guards
into loop bounds), and images of injective subscript maps (full-rank integer
maps, mixed-radix linearisations like ``g * Fg + f``, and ``//``/``%`` splits);
the proofs behind them live in `solar.einsum.proof`. Otherwise the cluster becomes
a `DeferredCount`: at a binding it enumerates the cluster's outer variables
(vectorised numpy) and counts the innermost variable in closed form (a union of
arithmetic progressions per outer point). Past `ENUMERATION_LIMIT` outer points it
stops, and the count of what it saw is a lower bound (a subset's image is a subset
of the image).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from solar.einsum.count import Count, DeferredCount
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
    split_divmod,
)
from solar.einsum.proof import Prover
from solar.ir import BoolLit, Expr, Name, walk_exprs
from solar.symbolic import (
    SymExpr,
    ceiling,
    count_symbol,
    has_unevaluated_sum,
    integer,
    smax,
    smin,
    summation,
)

__all__ = ["CountContext"]


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
    _prover: Prover = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._prover = Prover(self.definitions)

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
        if self._prover.nonneg(pts.expr - 1):
            return Count.of(1)
        return Count(smin(1, pts.expr), pts.deferred, pts.exact)

    def _cluster_image(self, cl: Cluster) -> Count:
        key = canonical_key("image", cl)
        if key not in self._memo:
            split = split_divmod(cl, self.definitions)
            if self._prover.injective(split):
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
        folded = self._prover.fold(cl.loops, cl.guards)
        if folded is None:
            return None
        _, chosen, box, owners = folded
        used = set().union(*(expr_vars(d, vs) for d in cl.dims))
        n = len(cl.loops)
        while n > 1 and vs[n - 1] not in used:
            lo, hi = chosen[n - 1]
            trip = self._prover.extreme(hi - lo, box, largest=False)
            if trip is None or not self._prover.nonneg(trip - 1):
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
            if has_index(lo) or has_index(hi) or not self._prover.nonneg(hi - lo - 1):
                return None
        lo, hi = chosen[-1]
        if not has_index(lo):
            top = self._prover.extreme(hi, box, largest=True)
            return None if top is None else Count.of(smax(0, top - lo))
        if not has_index(hi):
            bottom = self._prover.extreme(lo, box, largest=False)
            return None if bottom is None else Count.of(smax(0, hi - bottom))
        return None

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
        folded = self._prover.fold(loops, guards)
        if folded is None:
            return None
        syms, chosen, box, _ = folded
        expr: SymExpr = integer(1)
        for i in reversed(range(len(syms))):
            lo, hi = chosen[i]
            trip_min = self._prover.extreme(hi - lo, box, largest=False)
            if trip_min is None or not self._prover.nonneg(trip_min):
                hi = smax(lo, hi)
            expr = summation(expr, vs[i], lo, hi)
        if has_unevaluated_sum(expr) or (expr.free_symbols & set(syms)):
            return None
        return expr.expand()
