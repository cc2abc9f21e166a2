"""Index helpers shared by the nn lowerings (conv, pool, norm, attention, loss, resize, rnn).

Contract: pure helpers that build IR expressions and statements; no torch. `Aff` is an
affine index ``sum(coef * var) + const`` over loop variables with known extents, so a
lowering can ask for its range and emit only the guard conditions that can actually
fail (a padding guard that is always true would be noise; one that is missing would
read out of bounds). `Nest` creates loop variables for a list of extents, dropping
extent-1 loops (their index is the literal 0), so 1x1 convolutions, depthwise
convolutions and size-1 batch dims print without trivial loops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from solar.frontends.builder import KernelBuilder
from solar.frontends.pytorch.registry import UnsupportedOpError
from solar.ir import Binary, Call, Expr, For, If, IntLit, Name, Stmt, Unary, lit

__all__ = [
    "Aff",
    "Nest",
    "all_of",
    "expand_param",
    "fmax",
    "fmin",
    "guard",
    "iadd",
    "imul",
    "nest",
    "range_guard",
]


def _const(e: Expr) -> int | None:
    if isinstance(e, IntLit):
        return e.value
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.operand, IntLit):
        return -e.operand.value
    return None


def iadd(a: Expr | int, b: Expr | int) -> Expr:
    """Integer ``a + b`` with constant folding (``x + 0`` is ``x``; negatives subtract)."""
    ea, eb = lit(a) if isinstance(a, int) else a, lit(b) if isinstance(b, int) else b
    ca, cb = _const(ea), _const(eb)
    if ca is not None and cb is not None:
        return lit(ca + cb)
    if cb == 0:
        return ea
    if ca == 0:
        return eb
    if cb is not None and cb < 0:
        return Binary("-", ea, IntLit(-cb))
    return Binary("+", ea, eb)


def imul(a: Expr | int, b: Expr | int) -> Expr:
    """Integer ``a * b`` with constant folding (``1 * x`` is ``x``, ``0 * x`` is 0)."""
    ea, eb = lit(a) if isinstance(a, int) else a, lit(b) if isinstance(b, int) else b
    ca, cb = _const(ea), _const(eb)
    if ca is not None and cb is not None:
        return lit(ca * cb)
    if ca == 0 or cb == 0:
        return IntLit(0)
    if ca == 1:
        return eb
    if cb == 1:
        return ea
    if cb is not None:  # constants go first, as in ``2 * h``
        return Binary("*", eb, ea)
    return Binary("*", ea, eb)


@dataclass(frozen=True, slots=True)
class Aff:
    """An affine index ``sum(coef * var) + const``; each var has a known extent.

    >>> from solar.ir import print_expr
    >>> h, r = Name("h"), Name("r")
    >>> a = Aff.of((2, h, 5), (1, r, 3), const=-1)
    >>> print_expr(a.expr()), a.lo, a.hi
    ('2 * h + r - 1', -1, 9)
    """

    terms: tuple[tuple[int, Expr, int], ...]
    const: int = 0

    @staticmethod
    def of(*terms: tuple[int, Expr, int], const: int = 0) -> Aff:
        """Build from ``(coef, var, extent)`` triples; literal vars fold into ``const``."""
        kept: list[tuple[int, Expr, int]] = []
        for coef, var, ext in terms:
            c = _const(var)
            if c is not None:
                const += coef * c
            elif coef != 0:
                kept.append((coef, var, ext))
        return Aff(tuple(kept), const)

    def plus(self, other: Aff | int) -> Aff:
        """``self + other``."""
        if isinstance(other, int):
            return Aff(self.terms, self.const + other)
        return Aff(self.terms + other.terms, self.const + other.const)

    def scaled(self, k: int) -> Aff:
        """``k * self``."""
        return Aff(tuple((k * c, v, e) for c, v, e in self.terms), k * self.const)

    @property
    def lo(self) -> int:
        """Smallest value over the iteration space."""
        return self.const + sum(min(0, c * (e - 1)) for c, _, e in self.terms)

    @property
    def hi(self) -> int:
        """Largest value over the iteration space."""
        return self.const + sum(max(0, c * (e - 1)) for c, _, e in self.terms)

    def expr(self) -> Expr:
        """The IR expression, e.g. ``2 * h + r - 1``."""
        out: Expr | None = None
        for coef, var, _ in self.terms:
            term = imul(abs(coef), var)
            if out is None:
                out = term if coef > 0 else Unary("-", term)
            else:
                out = Binary("+" if coef > 0 else "-", out, term)
        if out is None:
            return lit(self.const)
        return iadd(out, self.const)


def range_guard(index: Aff, extent: int) -> list[Expr]:
    """The conditions ``0 <= index`` / ``index < extent`` that can fail over the space."""
    conds: list[Expr] = []
    e = index.expr()
    if index.lo < 0:
        conds.append(Binary("<=", IntLit(0), e))
    if index.hi >= extent:
        conds.append(Binary("<", e, lit(extent)))
    return conds


def all_of(conds: Sequence[Expr]) -> Expr | None:
    """``c1 and c2 and ...``; ``None`` for no conditions."""
    out: Expr | None = None
    for c in conds:
        out = c if out is None else Binary("and", out, c)
    return out


def guard(conds: Sequence[Expr], body: Sequence[Stmt]) -> list[Stmt]:
    """``body`` wrapped in ``if`` when there are conditions."""
    cond = all_of(conds)
    return list(body) if cond is None else [If(cond, tuple(body))]


def nest(
    dims: Sequence[tuple[Name, int | Expr] | tuple[Name, Expr, Expr]], body: Sequence[Stmt]
) -> list[Stmt]:
    """Wrap ``body`` in loops (outermost first); no dims gives ``body`` back."""
    stmts: tuple[Stmt, ...] = tuple(body)
    for dim in reversed(dims):
        if len(dim) == 2:
            var, hi = dim
            lo: int | Expr = 0
        else:
            var, lo, hi = dim
        stmts = (
            For(
                var.name,
                lit(lo) if isinstance(lo, int) else lo,
                lit(hi) if isinstance(hi, int) else hi,
                stmts,
            ),
        )
    return list(stmts)


class Nest:
    """Loop variables for ``extents``; an extent-1 dim gets index 0 and no loop.

    ``hint`` names the variables (one hint, or one per extent).

    Attributes:
        idx: one index expression per extent (a `Name` or the literal 0).
        dims: the ``(var, extent)`` pairs that need a loop.
    """

    def __init__(
        self, kb: KernelBuilder, extents: Sequence[int], hint: str | Sequence[str] = "i"
    ) -> None:
        self.extents = tuple(extents)
        self.idx: list[Expr] = []
        self.dims: list[tuple[Name, int]] = []
        hints = [hint] * len(self.extents) if isinstance(hint, str) else list(hint)
        for ext, h in zip(self.extents, hints, strict=True):
            if ext == 1:
                self.idx.append(IntLit(0))
            else:
                (v,) = kb.fresh_vars(1, h)
                self.idx.append(v)
                self.dims.append((v, ext))

    def aff(self, k: int, coef: int = 1) -> Aff:
        """``coef * idx[k]`` as an `Aff`."""
        return Aff.of((coef, self.idx[k], self.extents[k]))

    def wrap(self, body: Sequence[Stmt]) -> list[Stmt]:
        """``body`` inside this nest's loops."""
        return nest(self.dims, body)


def fmax(a: Expr, b: Expr) -> Expr:
    """``max(a, b)`` (1 FLOP)."""
    return Call("max", (a, b))


def fmin(a: Expr, b: Expr) -> Expr:
    """``min(a, b)`` (1 FLOP)."""
    return Call("min", (a, b))


def expand_param(
    value: int | Sequence[int] | None, n: int, name: str, default: int | None = None
) -> tuple[int, ...]:
    """An int-list parameter of length ``n`` (a single value is repeated).

    >>> expand_param([2], 3, "stride")
    (2, 2, 2)
    >>> expand_param([], 2, "stride", default=3)
    (3, 3)
    """
    if value is None or (not isinstance(value, int) and len(value) == 0):
        if default is None:
            raise UnsupportedOpError(f"missing {name}")
        return (default,) * n
    vals = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise UnsupportedOpError(f"{name} has {len(vals)} entries, expected {n}")
    return vals
