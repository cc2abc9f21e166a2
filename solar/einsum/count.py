"""Counts: numbers of iteration points or distinct elements, symbolic until evaluated.

Contract: plain frozen values. A `Count` is a sympy expression over size symbols
and opaque count symbols (``q0``, ``q1``...), each opaque symbol standing for a
`DeferredCount` that is evaluated numerically at a size binding. Every count is
EXACT or a LOWER bound, never more (see docs/bounds.md, "Counting"); arithmetic
keeps that flag (a sum of exact counts is exact). `solar.einsum.counter` builds
them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from solar.einsum.domain import LoopDim
from solar.einsum.enumeration import (
    ENUMERATION_LIMIT,
    count_image_numeric,
    count_points_numeric,
)
from solar.ir import Expr, print_expr
from solar.symbolic import SymExpr, evaluate, integer, smax, smax_all, sym_to_str

__all__ = ["Count", "DeferredCount"]


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

    @staticmethod
    def total(counts: Iterable[Count]) -> Count:
        """The sum of ``counts``, added in order (zero for none).

        >>> from solar.symbolic import size_symbol
        >>> Count.total([Count.of(2), Count.of(size_symbol("M"))]).formula
        'M + 2'
        """
        out = Count.of(0)
        for c in counts:
            out = out + c
        return out

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

    @staticmethod
    def max_of(counts: Sequence[Count], *, exact: bool | None = None) -> Count:
        """The maximum of one or more counts, built in one step (`solar.symbolic.smax_all`).

        ``exact`` defaults to all being exact; deferred counts are merged in order.
        """
        out = counts[0]
        for c in counts[1:]:
            out = Count(out.expr, out._merge(c), out.exact and c.exact)
        ex = out.exact if exact is None else exact
        return Count(smax_all([c.expr for c in counts]), out.deferred, ex)

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

        >>> from solar.symbolic import size_symbol
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
