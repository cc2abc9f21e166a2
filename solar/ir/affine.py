"""Integer linear forms of index expressions at a concrete size binding.

Contract: pure helpers over `solar.ir` expressions. A `Lin` is the package's one
linear-form type: ``sum(coef * var) + const`` over loop indices, with every size
already replaced by its value, so it only exists for affine expressions (``+``, ``-``,
products with a loop-invariant factor, and ``//``, ``%``, ``min``, ``max`` of
loop-invariant operands). `linear_form` builds it, for the verifier and for the
validator's executor. Two analyses of `solar.ir.verify` build on it, both *sound for
reporting* (they never claim a violation that is not real):

* `find_extreme` finds a concrete iteration point (a witness) where a subscript is
  smallest or largest over a loop nest; the caller re-checks the witness.
* `find_carried_shift` finds a read that sees an element written by another
  iteration of a plain (non-``seq``) loop at a constant shift.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from solar.ir.nodes import Access, Binary, Call, Expr, IntLit, Name, Unary
from solar.ir.traversal import eval_int

__all__ = [
    "DepEntry",
    "Lin",
    "LoopBox",
    "find_carried_shift",
    "find_extreme",
    "linear_form",
]


@dataclass(frozen=True, slots=True)
class Lin:
    """``sum(c * v for v, c in coefs) + const``; ``coefs`` is sorted with no zero entries."""

    coefs: tuple[tuple[str, int], ...]
    const: int

    @staticmethod
    def of(coefs: Mapping[str, int], const: int) -> Lin:
        """Build a normalised form from a coefficient mapping."""
        return Lin(tuple(sorted((v, c) for v, c in coefs.items() if c != 0)), const)

    def coef(self, var: str) -> int:
        """The coefficient of ``var`` (0 if absent)."""
        for v, c in self.coefs:
            if v == var:
                return c
        return 0

    def add(self, other: Lin, scale: int = 1) -> Lin:
        """``self + scale * other``."""
        coefs = dict(self.coefs)
        for v, c in other.coefs:
            coefs[v] = coefs.get(v, 0) + scale * c
        return Lin.of(coefs, self.const + scale * other.const)

    def scaled(self, k: int) -> Lin:
        """``k * self``."""
        return Lin.of({v: k * c for v, c in self.coefs}, k * self.const)

    def value(self, env: Mapping[str, int]) -> int:
        """Evaluate at a point binding every variable."""
        return self.const + sum(c * env[v] for v, c in self.coefs)

    def vars(self) -> frozenset[str]:
        """The variables with a nonzero coefficient."""
        return frozenset(v for v, _ in self.coefs)


def linear_form(
    expr: Expr, sizes: Mapping[str, int], *, loop_vars: AbstractSet[str] | None = None
) -> Lin | None:
    """The linear form of ``expr`` over loop variables at the size binding, or ``None``.

    ``None`` means the expression is not affine (``i * j``, ``i // 2``, a tensor read).

    Args:
        expr: an integer index expression.
        sizes: the size binding; these names are constants.
        loop_vars: the loop variables. Given, a loop variable shadows a size of the
            same name and any name in neither set makes the form ``None`` (the
            verifier's view). ``None`` (the executor's view of verified IR): every
            name not in ``sizes`` is a loop variable.

    >>> from solar.ir.parser import parse_expr
    >>> linear_form(parse_expr("2 * (i + N) - j"), {"N": 4}, loop_vars={"i", "j"})
    Lin(coefs=(('i', 2), ('j', -1)), const=8)
    >>> linear_form(parse_expr("2 * (i + N) - j"), {"N": 4})
    Lin(coefs=(('i', 2), ('j', -1)), const=8)
    >>> linear_form(parse_expr("i + K"), {"N": 4}, loop_vars={"i"}) is None
    True
    >>> linear_form(parse_expr("2 * (i + N) - j // 1"), {"N": 4}) is None
    True
    """

    match expr:
        case IntLit(value=v):
            return Lin((), v)
        case Name(name=n):
            return _name_form(n, sizes, loop_vars)
        case Unary(op="-", operand=o):
            inner = linear_form(o, sizes, loop_vars=loop_vars)
            return None if inner is None else inner.scaled(-1)
        case Binary(op=op, lhs=a, rhs=b) if op in _LIN_BINARY:
            return _lin_pair(_LIN_BINARY[op], a, b, sizes, loop_vars)
        case Call(func=f, args=(a, b)) if f in _LIN_CALLS:
            return _lin_pair(_LIN_CALLS[f], a, b, sizes, loop_vars)
        case _:
            return None


def _lin_pair(
    op: Callable[[Lin, Lin], Lin | None], a: Expr, b: Expr,
    sizes: Mapping[str, int], loop_vars: AbstractSet[str] | None,
) -> Lin | None:
    la = linear_form(a, sizes, loop_vars=loop_vars)
    lb = linear_form(b, sizes, loop_vars=loop_vars)
    return None if la is None or lb is None else op(la, lb)


def _lin_add(la: Lin, lb: Lin) -> Lin:
    return la.add(lb)


def _lin_sub(la: Lin, lb: Lin) -> Lin:
    return la.add(lb, -1)


def _lin_mul(la: Lin, lb: Lin) -> Lin | None:
    """Affine only with a loop-invariant factor."""
    if not la.coefs:
        return lb.scaled(la.const)
    return la.scaled(lb.const) if not lb.coefs else None


def _lin_floordiv(la: Lin, lb: Lin) -> Lin | None:
    """Constants only (the divisor nonzero)."""
    if la.coefs or lb.coefs or lb.const == 0:
        return None
    return Lin((), la.const // lb.const)


def _lin_mod(la: Lin, lb: Lin) -> Lin | None:
    """Constants only (the divisor nonzero)."""
    if la.coefs or lb.coefs or lb.const == 0:
        return None
    return Lin((), la.const % lb.const)


def _lin_min(la: Lin, lb: Lin) -> Lin | None:
    return None if la.coefs or lb.coefs else Lin((), min(la.const, lb.const))


def _lin_max(la: Lin, lb: Lin) -> Lin | None:
    return None if la.coefs or lb.coefs else Lin((), max(la.const, lb.const))


_LIN_BINARY: Mapping[str, Callable[[Lin, Lin], Lin | None]] = {
    "+": _lin_add,
    "-": _lin_sub,
    "*": _lin_mul,
    "//": _lin_floordiv,
    "%": _lin_mod,
}
_LIN_CALLS: Mapping[str, Callable[[Lin, Lin], Lin | None]] = {"min": _lin_min, "max": _lin_max}


def _name_form(
    name: str, sizes: Mapping[str, int], loop_vars: AbstractSet[str] | None
) -> Lin | None:
    """The form of a bare name (see `linear_form` for the two views of unknown names)."""
    if loop_vars is None:
        return Lin((), sizes[name]) if name in sizes else Lin(((name, 1),), 0)
    if name in loop_vars:
        return Lin(((name, 1),), 0)
    return Lin((), sizes[name]) if name in sizes else None


@dataclass(frozen=True, slots=True)
class LoopBox:
    """One enclosing loop: its variable, bounds (expressions and linear forms) and step."""

    var: str
    lo: Expr
    hi: Expr
    lo_lin: Lin | None
    hi_lin: Lin | None
    step: int


def find_extreme(
    form: Lin, loops: Sequence[LoopBox], sizes: Mapping[str, int], *, largest: bool
) -> tuple[int, dict[str, int]] | None:
    """A concrete point of the loop nest where ``form`` is (near) extreme, and its value.

    Variables are eliminated innermost first (an affine bound substituted for an
    affine bound), then a witness is built outermost first and checked to be a
    real iteration (every loop non-empty, values on the step grid). ``None`` when
    no witness could be built; the caller re-checks the returned value, so the
    analysis can miss violations but never invents one.

    >>> from solar.ir.nodes import IntLit, Name
    >>> box = LoopBox("i", IntLit(0), Name("N"), Lin((), 0), Lin((), 8), 1)
    >>> find_extreme(Lin((("i", 1),), 1), [box], {"N": 8}, largest=True)
    (8, {'i': 7})
    """
    sense = 1 if largest else -1
    coefs = dict(form.coefs)
    take_hi: dict[str, bool] = {}
    for loop in reversed(loops):
        c = coefs.pop(loop.var, 0)
        take_hi[loop.var] = upper = c * sense > 0
        if c == 0:
            continue
        bound = loop.hi_lin if upper else loop.lo_lin
        if bound is None:
            return None
        for v, b in bound.coefs:  # substitute the bound (hi - 1 or lo) for the variable
            coefs[v] = coefs.get(v, 0) + c * b
    env: dict[str, int] = dict(sizes)
    for loop in loops:
        lo = _bound_value(loop.lo, loop.lo_lin, env)
        hi = _bound_value(loop.hi, loop.hi_lin, env)
        if lo is None or hi is None or lo >= hi:
            return None
        env[loop.var] = lo + ((hi - 1 - lo) // loop.step) * loop.step if take_hi[loop.var] else lo
    if any(v not in env for v, _ in form.coefs):
        return None
    return form.value(env), {loop.var: env[loop.var] for loop in loops}


def _bound_value(expr: Expr, lin: Lin | None, env: Mapping[str, int]) -> int | None:
    if lin is not None:
        return lin.value(env)
    try:
        return eval_int(expr, env)
    except (KeyError, ValueError, ZeroDivisionError):
        return None


@dataclass(frozen=True, slots=True)
class DepEntry:
    """An access inside a loop body: program-order position and subscript forms."""

    pos: int
    access: Access
    forms: tuple[Lin, ...]


@dataclass(slots=True)
class _Line:
    ts: list[int] = field(default_factory=list)
    pos: list[int] = field(default_factory=list)
    accesses: list[Access] = field(default_factory=list)
    prefix_min: list[int] = field(default_factory=list)
    suffix_max: list[int] = field(default_factory=list)


def _line_key(entry: DepEntry, var: str, step: int) -> tuple[object, int] | None:
    """Group key and position ``t`` of an access on its line along ``var``.

    Accesses with equal keys touch elements ``base + t * a`` where ``a`` holds the
    coefficients of ``var``; iteration ``i`` of one meets iteration ``i + (t_r - t_w)``
    of the other.
    """
    a = [f.coef(var) for f in entry.forms]
    d0 = next((d for d, c in enumerate(a) if c != 0), None)
    if d0 is None:
        return None
    t = entry.forms[d0].const // a[d0]
    base = tuple(f.const - t * c for f, c in zip(entry.forms, a, strict=True))
    varpart = tuple(f.coefs for f in entry.forms)
    return (entry.access.tensor, varpart, base, t % step), t


def find_carried_shift(
    var: str, step: int, writes: Sequence[DepEntry], reads: Sequence[DepEntry],
    span: int | None = None,
) -> tuple[DepEntry, DepEntry, int] | None:
    """Find a read that a plain loop over ``var`` would break under loop fission.

    A read at iteration ``i`` that sees the element a write (``=`` or ``op=``) makes at
    iteration ``i + d`` (``d != 0``, same values of every other index) is wrong when
    executed statement by statement if the write does not strictly precede the read
    for ``d < 0`` (the value must come from an earlier iteration), or if the write
    precedes the read for ``d > 0`` (the read must see the old value).

    ``span`` (``hi - lo`` of the loop, when known) excludes shifts ``|d| >= span``: no two
    iterations are that far apart, so such accesses never meet.

    Returns:
        ``(read, write, d)`` for the first offending read in program order, else ``None``.
        Runs in O((reads + writes) log writes) without ``span``.
    """
    lines: dict[object, _Line] = {}
    for w in writes:
        key = _line_key(w, var, step)
        if key is None:
            continue
        line = lines.setdefault(key[0], _Line())
        line.ts.append(key[1])
        line.pos.append(w.pos)
        line.accesses.append(w.access)
    for line in lines.values():
        order = sorted(range(len(line.ts)), key=lambda k: line.ts[k])
        line.ts = [line.ts[k] for k in order]
        line.pos = [line.pos[k] for k in order]
        line.accesses = [line.accesses[k] for k in order]
        run: list[int] = []
        for p in line.pos:
            run.append(min(run[-1], p) if run else p)
        line.prefix_min = run
        back: list[int] = []
        for p in reversed(line.pos):
            back.append(max(back[-1], p) if back else p)
        line.suffix_max = back[::-1]
    for r in reads:
        key = _line_key(r, var, step)
        if key is None or key[0] not in lines:
            continue
        line = lines[key[0]]
        t_r = key[1]
        if span is not None:
            hit = _within_span(line, r, t_r, span)
            if hit is not None:
                return r, _entry(line, hit), t_r - line.ts[hit]
            continue
        below = bisect.bisect_left(line.ts, t_r)  # writes with t_w < t_r: d > 0
        if below > 0 and line.prefix_min[below - 1] < r.pos:
            k = min(range(below), key=lambda k: line.pos[k])
            return r, _entry(line, k), t_r - line.ts[k]
        above = bisect.bisect_right(line.ts, t_r)  # writes with t_w > t_r: d < 0
        if above < len(line.ts) and line.suffix_max[above] >= r.pos:
            k = max(range(above, len(line.ts)), key=lambda k: line.pos[k])
            return r, _entry(line, k), t_r - line.ts[k]
    return None


def _within_span(line: _Line, r: DepEntry, t_r: int, span: int) -> int | None:
    """The offending write nearest in program order among shifts ``0 < |d| < span``."""
    first = bisect.bisect_right(line.ts, t_r - span)
    below = bisect.bisect_left(line.ts, t_r)
    earlier = [k for k in range(first, below) if line.pos[k] < r.pos]
    if earlier:
        return min(earlier, key=lambda k: line.pos[k])
    above = bisect.bisect_right(line.ts, t_r)
    last = bisect.bisect_left(line.ts, t_r + span)
    later = [k for k in range(above, last) if line.pos[k] >= r.pos]
    if later:
        return max(later, key=lambda k: line.pos[k])
    return None


def _entry(line: _Line, k: int) -> DepEntry:
    return DepEntry(line.pos[k], line.accesses[k], ())
