"""Symbolic facts about iteration domains, proved for every positive size binding.

Contract: ``Prover(definitions)`` answers questions about affine sympy expressions
over size and loop-index symbols; every True answer is a proof (it holds at every
binding of positive sizes, derived sizes expanded by ``definitions``), while False
or None means "not proved", never "false". It provides sign proofs (`Prover.nonneg`),
extremes of affine forms over a box of outer loop variables (`Prover.extreme`),
guard folding into loop bounds (`Prover.fold`, Note [Guard folding]) and injectivity
of subscript maps (`Prover.injective`: full-rank integer maps and mixed-radix
linearisations). `solar.einsum.counter` builds closed-form counts on these facts.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeAlias

import numpy as np

from solar.einsum.domain import (
    Cluster,
    LoopDim,
    affine_loops,
    has_index,
    is_affine,
    sym_inequalities,
)
from solar.ir import Expr
from solar.symbolic import (
    SymExpr,
    index_symbol,
    integer,
    is_known_leq,
    size_symbol,
    smax,
    smin,
    to_sympy,
)

__all__ = ["Box", "FoldedLoops", "Prover"]

Box: TypeAlias = dict[SymExpr, tuple[SymExpr, SymExpr]]
"""Ranges ``[lo, hi)`` of outer loop-index symbols over all outer points (a superset)."""


class FoldedLoops(NamedTuple):
    """Loops with their affine guards folded into the bounds (see `Prover.fold`).

    Attributes:
        syms: the loops' index symbols, outermost first.
        bounds: the chosen ``(lo, hi)`` per loop, guards folded in.
        box: the range of each variable over all outer points, where known.
        owners: per guard, the positions of the variables it was folded into.
    """

    syms: list[SymExpr]
    bounds: list[tuple[SymExpr, SymExpr]]
    box: Box
    owners: list[set[int]]


@dataclass(frozen=True, slots=True)
class Prover:
    """Proofs under a program's size definitions.

    Args:
        definitions: derived sizes as expressions of free sizes.
    """

    definitions: Mapping[str, SymExpr] = field(default_factory=dict)

    def nonneg(self, expr: SymExpr) -> bool:
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

    def fold(self, loops: Sequence[LoopDim], guards: Sequence[Expr]) -> FoldedLoops | None:
        """Fold affine guards into loop bounds (Note [Guard folding]).

        A guard ``+-v + rest >= 0`` bounds its innermost variable ``v``; of several
        candidate bounds the one that provably dominates over the box of outer
        variables is kept. Returns None when a guard is not of that form or no bound
        dominates.
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
        box: Box = {}
        chosen: list[tuple[SymExpr, SymExpr]] = []
        for i, s in enumerate(syms):
            lo = self.pick(lo_c[i], box, largest=True)
            hi = self.pick(hi_c[i], box, largest=False)
            if lo is None or hi is None:
                return None
            chosen.append((lo, hi))
            lo_box = self.extreme(lo, box, largest=False)
            hi_box = self.extreme(hi, box, largest=True)
            if lo_box is not None and hi_box is not None:
                box[s] = (lo_box, hi_box)
        return FoldedLoops(syms, chosen, box, owners)

    def extreme(
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

    def pick(
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
                d = self.extreme(c - o if largest else o - c, box, largest=False)
                if d is None or not self.nonneg(d):
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

    def injective(self, cl: Cluster) -> bool:
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
                if not self.nonneg(coeffs[k] - span - 1):
                    ok = False
                    break
                span = span + coeffs[k] * (extents[k] - 1)
            if ok:
                return True
        return False
