"""Index arithmetic for lowerings: affine indices, guards, loop nests, view maps.

Contract: pure functions building `solar.ir` expressions and statements; no torch, no
jax. `Aff` is an affine index ``sum(coef * var) + const`` over loop variables with known
extents, so a lowering emits only the guard conditions that can actually fail (a padding
guard that always holds is noise; a missing one reads out of bounds). `Nest` makes loop
variables for a list of extents and drops extent-1 loops (their index is the literal 0),
so 1x1 convolutions and size-1 batch dims print without trivial loops. `reshape_map`
and `broadcast_map` build the index maps of free views.

`Aff` is a builder, not an analysis: it keeps its terms in the order the lowering wrote
them (the printer shows ``2 * h + r - 1`` as written) and carries each variable's
extent. The analyses' normalised linear form is `solar.ir.Lin`.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, SupportsIndex

from solar.frontends.kit.table import UnsupportedOpError
from solar.frontends.kit.values import shape_numel
from solar.ir import Binary, Call, Expr, For, If, IntLit, Name, Stmt, Unary, lit

__all__ = [
    "Aff",
    "LoopVars",
    "Nest",
    "all_of",
    "as_int",
    "broadcast_map",
    "const_int",
    "expand_param",
    "fmax",
    "fmin",
    "guard",
    "iadd",
    "iadd_const_last",
    "imul",
    "imul_const_last",
    "nest",
    "range_guard",
    "reshape_map",
    "shape_numel",
]


def const_int(e: Expr) -> int | None:
    """The value of an integer literal (``-3`` included), else ``None``.

    >>> const_int(lit(-3)), const_int(Name("i"))
    (-3, None)
    """
    if isinstance(e, IntLit):
        return e.value
    if isinstance(e, Unary) and e.op == "-" and isinstance(e.operand, IntLit):
        return -e.operand.value
    return None


def iadd(a: Expr | int, b: Expr | int) -> Expr:
    """Integer ``a + b`` with constant folding (``x + 0`` is ``x``; negatives subtract).

    >>> from solar.ir import print_expr
    >>> print_expr(iadd(Name("i"), -2))
    'i - 2'
    """
    ea, eb = lit(a) if isinstance(a, int) else a, lit(b) if isinstance(b, int) else b
    ca, cb = const_int(ea), const_int(eb)
    if ca is not None and cb is not None:
        return lit(ca + cb)
    if cb == 0:
        return ea
    if ca == 0:
        return eb
    if cb is not None and cb < 0:
        return Binary("-", ea, IntLit(-cb))
    return Binary("+", ea, eb)


def iadd_const_last(a: Expr, b: Expr | int) -> Expr:
    """``a + b`` folding zeros (``b`` may be negative), spelled as the PyTorch frontend's
    view maps spell it (Note [Constant-last index spelling] in
    `solar.frontends.pytorch.ops_movement`): Python ints fold, expressions stay as written.

    >>> from solar.ir import print_expr
    >>> print_expr(iadd_const_last(Name("i"), -2)), print_expr(iadd_const_last(lit(2), 3))
    ('i - 2', '5')
    """
    if isinstance(b, int):
        if b == 0:
            return a
        if isinstance(a, IntLit):
            return lit(a.value + b)
        return Binary("+", a, IntLit(b)) if b > 0 else Binary("-", a, IntLit(-b))
    if isinstance(a, IntLit) and a.value == 0:
        return b
    if isinstance(b, IntLit) and b.value == 0:
        return a
    return Binary("+", a, b)


def imul_const_last(a: Expr, k: int) -> Expr:
    """``a * k`` folding ones and zeros, the constant last (``o0 * 3``)."""
    if k == 1:
        return a
    if k == 0:
        return IntLit(0)
    if isinstance(a, IntLit):
        return lit(a.value * k)
    return Binary("*", a, IntLit(k)) if k > 0 else Binary("*", a, lit(k))


def imul(a: Expr | int, b: Expr | int) -> Expr:
    """Integer ``a * b`` with constant folding; constants go first (``2 * h``).

    >>> from solar.ir import print_expr
    >>> print_expr(imul(Name("h"), 2)), print_expr(imul(1, Name("h")))
    ('2 * h', 'h')
    """
    ea, eb = lit(a) if isinstance(a, int) else a, lit(b) if isinstance(b, int) else b
    ca, cb = const_int(ea), const_int(eb)
    if ca is not None and cb is not None:
        return lit(ca * cb)
    if ca == 0 or cb == 0:
        return IntLit(0)
    if ca == 1:
        return eb
    if cb == 1:
        return ea
    if cb is not None:
        return Binary("*", eb, ea)
    return Binary("*", ea, eb)


@dataclass(frozen=True, slots=True)
class Aff:
    """An affine index ``sum(coef * var) + const``; each var has a known extent.

    >>> from solar.ir import print_expr
    >>> a = Aff.of((2, Name("h"), 5), (1, Name("r"), 3), const=-1)
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
            c = const_int(var)
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
    """The conditions ``0 <= index`` / ``index < extent`` that can fail over the space.

    >>> len(range_guard(Aff.of((1, Name("i"), 4)), 4)), len(range_guard(Aff.of(const=-1), 4))
    (0, 1)
    """
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


LoopDim = tuple[Name, int | Expr] | tuple[Name, int | Expr, int | Expr]
"""``(var, hi)`` for ``for var in 0 .. hi``, or ``(var, lo, hi)``."""


def nest(dims: Sequence[LoopDim], body: Sequence[Stmt], *, seq: bool = False) -> list[Stmt]:
    """Wrap ``body`` in loops (outermost first); ``seq`` marks them all ``seq``.

    No dims gives ``body`` back.

    >>> from solar.ir import Assign, Access, print_stmt
    >>> i = Name("i")
    >>> print(print_stmt(nest([(i, 1, 4)], [Assign(Access("y", (i,)), lit(0.0))])[0]))
    for i in 1 .. 4 {
      y[i] = 0.0
    }
    """
    stmts: tuple[Stmt, ...] = tuple(body)
    for dim in reversed(dims):
        var, lo, hi = (dim[0], 0, dim[1]) if len(dim) == 2 else dim
        stmts = (For(var.name, _as_index(lo), _as_index(hi), stmts, seq=seq),)
    return list(stmts)


def _as_index(v: int | Expr) -> Expr:
    return lit(v) if isinstance(v, int) else v


class LoopVars(Protocol):
    """Anything that hands out fresh loop variables (a kernel builder or a loop body)."""

    def fresh_vars(self, n: int, hint: str = ...) -> tuple[Name, ...]:
        """``n`` loop variables unique in the program."""
        ...


class Nest:
    """Loop variables for ``extents``; an extent-1 dim gets index 0 and no loop.

    ``hint`` names the variables (one hint, or one per extent).

    Attributes:
        extents: the extents, one per dim.
        idx: one index expression per extent (a `Name` or the literal 0).
        dims: the ``(var, extent)`` pairs that need a loop.
    """

    def __init__(
        self, kb: LoopVars, extents: Sequence[int], hint: str | Sequence[str] = "i"
    ) -> None:
        self.extents = tuple(int(e) for e in extents)
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

    @property
    def empty(self) -> bool:
        """True when some extent is 0 (the nest runs no iteration)."""
        return any(e == 0 for e in self.extents)


def fmax(a: Expr, b: Expr) -> Expr:
    """``max(a, b)`` (1 FLOP)."""
    return Call("max", (a, b))


def fmin(a: Expr, b: Expr) -> Expr:
    """``min(a, b)`` (1 FLOP)."""
    return Call("min", (a, b))


def as_int(value: object, name: str) -> int:
    """An integer parameter of an op (an ``int``, or any value with ``__index__``).

    >>> as_int(True, "groups"), as_int(3, "groups")
    (1, 3)

    Raises:
        UnsupportedOpError: anything else.
    """
    if isinstance(value, SupportsIndex):
        return operator.index(value)
    raise UnsupportedOpError(f"{name} is not an integer: {value!r}")


def expand_param(value: object, n: int, name: str, default: int | None = None) -> tuple[int, ...]:
    """An int-list parameter of length ``n`` (a single value is repeated).

    >>> expand_param([2], 3, "stride")
    (2, 2, 2)
    >>> expand_param([], 2, "stride", default=3)
    (3, 3)

    Raises:
        UnsupportedOpError: the parameter is missing, no int or int sequence, or has
            another length.
    """
    if value is None or (isinstance(value, Sequence) and len(value) == 0):
        if default is None:
            raise UnsupportedOpError(f"missing {name}")
        return (default,) * n
    if isinstance(value, Sequence) and not isinstance(value, str):
        vals = tuple(as_int(v, name) for v in value)
    else:
        vals = (as_int(value, name),)
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise UnsupportedOpError(f"{name} has {len(vals)} entries, expected {n}")
    return vals


def broadcast_map(
    in_shape: Sequence[int], out_shape: Sequence[int], dims: Sequence[int]
) -> tuple[tuple[int, ...], ...]:
    """For ``broadcast_in_dim``: per input dim, the output dim it reads (``()`` = index 0).

    >>> broadcast_map((1, 3), (2, 4, 3), (0, 2))
    ((), (2,))
    """
    out: list[tuple[int, ...]] = []
    for k, d in enumerate(dims):
        out.append(() if in_shape[k] == 1 and out_shape[d] != 1 else (d,))
    return tuple(out)


def reshape_map(
    in_shape: Sequence[int], out_shape: Sequence[int], idx: Sequence[Expr]
) -> list[Expr]:
    """Indices into a row-major tensor of ``in_shape`` for indices ``idx`` of ``out_shape``.

    Dims are matched in groups of equal element count, so a split or merge yields
    ``o // 4`` / ``o % 4`` or ``a * 4 + b`` instead of a full linearisation.

    >>> from solar.ir import print_expr
    >>> [print_expr(e) for e in reshape_map((2, 12), (2, 3, 4), [Name("a"), Name("b"), Name("c")])]
    ['a', '4 * b + c']
    >>> [print_expr(e) for e in reshape_map((6,), (2, 3), [Name("a"), Name("b")])]
    ['3 * a + b']
    >>> [print_expr(e) for e in reshape_map((2, 3), (6,), [Name("a")])]
    ['a // 3', 'a % 3']
    """
    if 0 in in_shape or 0 in out_shape:
        return [IntLit(0) for _ in in_shape]
    out: list[Expr] = []
    i = j = 0
    n_in, n_out = len(in_shape), len(out_shape)
    while i < n_in or j < n_out:
        gi: list[int] = []
        gj: list[int] = []
        pi = pj = 1
        if i < n_in:
            gi.append(i)
            pi *= in_shape[i]
            i += 1
        if j < n_out:
            gj.append(j)
            pj *= out_shape[j]
            j += 1
        # Equal total products guarantee that the smaller side has dims left.
        while pi != pj:
            if pi < pj:
                gi.append(i)
                pi *= in_shape[i]
                i += 1
            else:
                gj.append(j)
                pj *= out_shape[j]
                j += 1
        out.extend(
            _group_map([in_shape[k] for k in gi], [out_shape[k] for k in gj], [idx[k] for k in gj])
        )
    return out


def _group_map(in_dims: Sequence[int], out_dims: Sequence[int], idx: Sequence[Expr]) -> list[Expr]:
    """Map one reshape group (equal products): linearise the out indices, then split."""
    # Linear index over the output group (size-1 dims contribute nothing).
    lin: Expr = IntLit(0)
    stride = 1
    for d, e in zip(reversed(out_dims), reversed(idx), strict=True):
        if d != 1:
            lin = iadd(imul(stride, e), lin) if const_int(lin) != 0 else imul(stride, e)
        stride *= d
    total = stride
    res: list[Expr] = []
    stride = total
    seen_nontrivial = False
    for d in in_dims:
        stride //= max(d, 1)
        if d == 1:
            res.append(IntLit(0))
            continue
        e = lin
        if stride != 1:
            e = Binary("//", e, lit(stride))
        if seen_nontrivial:
            e = Binary("%", e, lit(d))
        seen_nontrivial = True
        res.append(e)
    return res
