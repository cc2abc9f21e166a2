"""The one sympy façade: symbols for sizes and indices, conversion and evaluation.

Contract: no other SOLAR module imports sympy. Sizes are ``integer, positive``
symbols; loop indices are ``integer, nonnegative``. Expressions built here can be
evaluated at any size binding with `evaluate`.
"""

from __future__ import annotations

import functools
import operator
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeAlias

import sympy

from solar.ir import Binary, Call, Expr, IntLit, Name, SizeDecl, Unary

__all__ = [
    "SymExpr",
    "ceiling",
    "compile_exprs",
    "count_symbol",
    "evaluate",
    "evaluate_formula",
    "inline_derived_sizes",
    "free_size_names",
    "index_symbol",
    "is_known_leq",
    "integer",
    "product",
    "has_unevaluated_sum",
    "size_symbol",
    "smax",
    "smax_all",
    "smin",
    "smin_all",
    "summation",
    "sym_to_str",
    "to_sympy",
]

SymExpr: TypeAlias = sympy.Expr


@functools.cache
def size_symbol(name: str) -> sympy.Symbol:
    """The symbol for a program size (positive integer)."""
    return sympy.Symbol(name, integer=True, positive=True)


@functools.cache
def index_symbol(name: str) -> sympy.Symbol:
    """The symbol for a loop index (non-negative integer)."""
    return sympy.Symbol(f"_i_{name}", integer=True, nonnegative=True)


@functools.cache
def count_symbol(name: str) -> sympy.Symbol:
    """An opaque count evaluated numerically (non-negative integer, bound by name like a size)."""
    return sympy.Symbol(name, integer=True, nonnegative=True)


def integer(value: int | float) -> SymExpr:
    """A sympy number (``Integer`` for ints, ``Float``/``Rational`` otherwise)."""
    if isinstance(value, int):
        return sympy.Integer(value)
    return sympy.nsimplify(value) if float(value).is_integer() else sympy.Float(value)


def to_sympy(
    expr: Expr,
    *,
    indices: Iterable[str] = (),
    sizes: Mapping[str, SymExpr] | None = None,
) -> SymExpr:
    """Convert an integer IR expression to sympy.

    Names in ``indices`` become index symbols; names in ``sizes`` are substituted by
    the given expressions (derived sizes); other names become size symbols.

    Raises:
        ValueError: the expression is not an integer expression.

    >>> from solar.ir import parse_expr
    >>> to_sympy(parse_expr("(H - 3) // 2 + 1"))
    floor(H/2 - 3/2) + 1
    """
    return _ToSympy(frozenset(indices), sizes or {}).go(expr)


def _floor_div(a: SymExpr, b: SymExpr) -> SymExpr:
    return sympy.floor(a / b)


_SYMPY_BINARY: Mapping[str, Callable[[SymExpr, SymExpr], SymExpr]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": _floor_div,
    "%": sympy.Mod,
}
_SYMPY_CALLS: Mapping[str, Callable[[SymExpr, SymExpr], SymExpr]] = {
    "min": sympy.Min,
    "max": sympy.Max,
}


@dataclass(frozen=True, slots=True)
class _ToSympy:
    """`to_sympy` over one scope: index names and substituted sizes."""

    indices: frozenset[str]
    sizes: Mapping[str, SymExpr]

    def go(self, e: Expr) -> SymExpr:
        match e:
            case IntLit(value=v):
                return sympy.Integer(v)
            case Name(name=n):
                return self.name(n)
            case Unary(op="-", operand=o):
                return -self.go(o)
            case Binary(op=op, lhs=a, rhs=b) if op in _SYMPY_BINARY:
                return _SYMPY_BINARY[op](self.go(a), self.go(b))
            case Call(func=f, args=(a, b)) if f in _SYMPY_CALLS:
                return _SYMPY_CALLS[f](self.go(a), self.go(b))
            case _:
                raise ValueError(f"not an integer expression: {type(e).__name__}")

    def name(self, n: str) -> SymExpr:
        if n in self.indices:
            return index_symbol(n)
        if n in self.sizes:
            return self.sizes[n]
        return size_symbol(n)


def product(factors: Iterable[SymExpr | int]) -> SymExpr:
    """Product of symbolic factors (1 for none)."""
    out: SymExpr = sympy.Integer(1)
    for f in factors:
        out = out * f
    return out


def smin(a: SymExpr | int, b: SymExpr | int) -> SymExpr:
    """Symbolic minimum (`smin_all` of the two)."""
    return smin_all((a, b))


def smax(a: SymExpr | int, b: SymExpr | int) -> SymExpr:
    """Symbolic maximum (`smax_all` of the two)."""
    return smax_all((a, b))


def smax_all(exprs: Iterable[SymExpr | int]) -> SymExpr:
    """Symbolic maximum of several expressions, the same expression as ``sympy.Max(*exprs)``.

    >>> M, N = size_symbol("M"), size_symbol("N")
    >>> smax_all([M, N, M + N, 2 * M])
    Max(2*M, M + N)
    """
    return _min_max(sympy.Max, exprs)


def smin_all(exprs: Iterable[SymExpr | int]) -> SymExpr:
    """Symbolic minimum of several expressions, the same expression as ``sympy.Min(*exprs)``."""
    return _min_max(sympy.Min, exprs)


# Note [Max by sampling]: sympy's Max(a, b, ...) keeps the arguments it cannot order,
# trying every pair with up to a dozen assumption queries (``x >= y``, ``x <= y``, then
# again on ``factor_terms(x - y)``), tens of milliseconds per pair for products of sizes;
# a union folded one image at a time re-tries every pair at each step (cubic). Most pairs
# are not orderable at all: the pieces of a padded or concatenated tensor
# (``B*(W_p1 - 1)`` against ``B*(H_p1 - 1)``). Evaluating both at a few points that satisfy
# every symbol's assumptions (integer and positive or non-negative) and finding one point
# where each is strictly larger proves sympy can prove no order: its proofs use only those
# assumptions, so any order it proved would hold at every such point. Such a pair is left
# to sympy only if some other pair needs it; the arguments no pair needs keep exactly the
# place sympy would give them (it drops only an argument it orders below another), so the
# result is the very expression ``sympy.Max`` builds, at a fraction of the queries.

_SAMPLE_POINTS = 32


def _min_max(cls: type[sympy.Max] | type[sympy.Min], exprs: Iterable[SymExpr | int]) -> SymExpr:
    """``cls(*exprs)``, leaving sympy only the pairs sampling cannot separate."""
    args: dict[SymExpr, None] = {}
    for e in exprs:
        s = sympy.sympify(e)
        for a in (s.args if s.func == cls else (s,)):
            args[a] = None
    items = list(args)
    if len(items) < 2 or any(a.is_number or isinstance(a, sympy.Max | sympy.Min) for a in items):
        # Sympy's own argument collapsing looks at numbers and nested Min/Max.
        return cls(*items)
    samples = [_samples(a) for a in items]
    tied: set[int] = set()
    for i, si in enumerate(samples):
        for j in range(i + 1, len(items)):
            sj = samples[j]
            if si is None or sj is None or not (
                any(x > y for x, y in zip(si, sj, strict=True))
                and any(x < y for x, y in zip(si, sj, strict=True))
            ):
                tied.update((i, j))
    if not tied:
        return cls(*items, evaluate=False)
    rest = cls(*(items[i] for i in sorted(tied)))
    free = [a for i, a in enumerate(items) if i not in tied]
    kept = rest.args if rest.func == cls else (rest,)
    return cls(*free, *kept, evaluate=False)


@functools.lru_cache(maxsize=1 << 14)
def _samples(expr: SymExpr) -> tuple[Fraction, ...] | None:
    """``expr`` at `_SAMPLE_POINTS` fixed points that satisfy its symbols' assumptions.

    None if a symbol is not a (positive or non-negative) integer or a value is not rational.
    """
    syms = sorted(expr.free_symbols, key=str)
    for s in syms:
        if not (s.is_integer and s.is_nonnegative):
            return None
    out = []
    for k in range(_SAMPLE_POINTS):
        v = expr.xreplace({s: sympy.Integer(_sample_value(str(s), bool(s.is_positive), k))
                           for s in syms})
        if not v.is_Rational:
            return None
        out.append(Fraction(int(v.p), int(v.q)))
    return tuple(out)


@functools.cache
def _sample_value(name: str, positive: bool, k: int) -> int:
    """The value of symbol ``name`` at sample point ``k`` (the smallest one at point 0)."""
    lo = 1 if positive else 0
    if k == 0:
        return lo
    # Small values often decide an order (a factor ``H_p1 - 1`` is 0 only at H_p1 = 1), large
    # ones the leading terms (``(B - 3)*(W - 4)`` against ``(B - 2)*(W - 2)``).
    rng = random.Random(f"{name}/{k}")
    return lo + rng.choice((0, 0, 0, 1, 2, rng.randrange(3, 64), rng.randrange(64, 1 << 20)))


def free_size_names(expr: SymExpr) -> frozenset[str]:
    """Names of the size symbols ``expr`` depends on."""
    return frozenset(str(s) for s in expr.free_symbols)


def evaluate(expr: SymExpr | int | float, bindings: Mapping[str, int | float]) -> float:
    """Evaluate a symbolic expression at a size binding.

    Raises:
        ValueError: a size the expression depends on is unbound.

    >>> evaluate(size_symbol("M") * 2, {"M": 3})
    6.0
    """
    if isinstance(expr, int | float):
        return float(expr)
    missing = free_size_names(expr) - set(bindings)
    if missing:
        raise ValueError(f"unbound sizes: {', '.join(sorted(missing))}")
    # Bind by name, so opaque `count_symbol`s are bound like sizes.
    subs = {s: bindings[str(s)] for s in expr.free_symbols}
    return float(expr.xreplace({k: sympy.Integer(v) if isinstance(v, int) else sympy.Float(v)
                                for k, v in subs.items()}))


def compile_exprs(exprs: Iterable[SymExpr | int], names: tuple[str, ...]) -> object:
    """Compile several expressions into one numpy function of the named symbols.

    Symbols are matched by name, so sizes and `count_symbol`s may both be arguments.
    The function returns a list with one value per expression.

    >>> f = compile_exprs([size_symbol("M") * 2, count_symbol("q0") + 1], ("M", "q0"))
    >>> [int(v) for v in f(3, 4)]
    [6, 5]
    """
    items = [sympy.sympify(e) for e in exprs]
    by_name: dict[str, sympy.Symbol] = {}
    for e in items:
        for sym in e.free_symbols:
            by_name[str(sym)] = sym
    args = [by_name.get(n, size_symbol(n)) for n in names]
    import numpy
    from sympy.printing.numpy import NumPyPrinter

    # Note [Lambdify namespace]: ``modules="numpy"`` runs ``from numpy import *``, which
    # imports every lazily loaded numpy submodule (``f2py``, ``ma``, ``polynomial``...,
    # about 0.4 s); numpy's printer names everything ``numpy.<fn>`` or
    # ``functools.reduce``, so the two modules are the whole namespace it needs.
    return sympy.lambdify(
        args,
        items,
        modules=[{"numpy": numpy, "functools": functools}],
        printer=NumPyPrinter,
        cse=False,
    )


def summation(expr: SymExpr, index: str, lo: SymExpr | int, hi: SymExpr | int) -> SymExpr:
    """Closed form of ``sum(expr for index in range(lo, hi))`` (``hi`` exclusive).

    The caller guarantees ``hi >= lo`` (sympy's convention for reversed limits
    is not an empty sum). Returns an expression that may contain an unevaluated
    ``Sum`` when no closed form exists; check with `has_unevaluated_sum`.

    >>> i = index_symbol("i")
    >>> summation(i + 1, "i", 0, size_symbol("L"))
    L**2/2 + L/2
    """
    var = index_symbol(index)
    body = sympy.sympify(expr)
    if not body.has(var):  # a rectangular piece: sympy.summation takes ~30 ms to say this
        return body * (sympy.sympify(hi) - lo)
    return sympy.summation(body, (var, lo, sympy.sympify(hi) - 1))


def has_unevaluated_sum(expr: SymExpr) -> bool:
    """True if ``expr`` contains a ``Sum`` that sympy could not evaluate."""
    return bool(sympy.sympify(expr).has(sympy.Sum))


def ceiling(expr: SymExpr) -> SymExpr:
    """Symbolic ceiling."""
    return sympy.ceiling(expr)


def is_known_leq(a: SymExpr | int, b: SymExpr | int) -> bool:
    """True only if ``a <= b`` is provable for all positive size bindings.

    A binding where ``b - a`` is negative answers ``False`` at once: no proof can
    exist, and ``sympy.simplify`` (whose first call imports ``sympy.physics``, about
    0.2 s) is spared; the answer is the one the proof attempt gives.

    >>> s = size_symbol("S")
    >>> is_known_leq(0, 2 - ceiling(s / 2)), is_known_leq(0, s - 1), is_known_leq(s, 2 * s)
    (False, True, True)
    """
    diff = sympy.sympify(b) - sympy.sympify(a)
    if _negative_somewhere(diff):
        return False
    return bool(sympy.simplify(diff).is_nonnegative)


_PROBES = (1, 2**20)
"""Values every size and index takes in `_negative_somewhere` (indices also 0)."""


def _negative_somewhere(expr: SymExpr) -> bool:
    """True when ``expr`` is negative with every free symbol at one of `_PROBES` (or 0
    for an index): a counterexample to ``expr >= 0`` within the symbols' domains.
    ``False`` says nothing (a symbol of unknown sign, a value that is not a number)."""
    symbols = expr.free_symbols
    if not all(s.is_nonnegative for s in symbols):
        return False
    points = [{s: sympy.Integer(v) for s in symbols} for v in _PROBES]
    points.append({s: sympy.Integer(1 if s.is_positive else 0) for s in symbols})
    for point in points:
        value = expr.xreplace(point)
        if value.is_number and value.is_extended_negative:
            return True
    return False


def sym_to_str(expr: SymExpr | int) -> str:
    """A stable textual form of a symbolic expression (for reports)."""
    return str(sympy.sympify(expr))


_FORMULA_FUNCTIONS = frozenset({"floor", "ceiling", "Min", "Max", "Mod", "Sum", "oo"})


def _parse_formula(text: str) -> SymExpr:
    """A report formula (`sym_to_str` text) back as an expression of size symbols."""
    names = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)) - _FORMULA_FUNCTIONS
    parsed = sympy.sympify(text, locals={n: size_symbol(n) for n in names}, rational=True)
    return parsed.xreplace({s: size_symbol(str(s)) for s in parsed.free_symbols})


def inline_derived_sizes(expr: SymExpr, decls: Iterable[SizeDecl]) -> str:
    """``expr`` as text with every derived size replaced by its expression in free sizes.

    A report's formulas then name only sizes a user can set.

    >>> from solar.ir import parse_expr
    >>> decls = [SizeDecl("D", IntLit(8)), SizeDecl("D3", parse_expr("3 * D"))]
    >>> inline_derived_sizes(2 * size_symbol("D3") + size_symbol("D"), decls)
    '7*D'
    """
    derived: dict[str, SymExpr] = {}
    for d in decls:
        if not isinstance(d.value, IntLit):
            derived[d.name] = to_sympy(d.value, sizes=derived)
    if not derived:
        return sym_to_str(expr)
    subs = {size_symbol(n): e for n, e in derived.items()}
    return sym_to_str(_expand(_xreplace(sympy.sympify(expr), subs)))


# Note [Max by sampling] applies to rebuilding too: ``xreplace`` and ``expand`` rebuild
# every Max/Min whose arguments change with ``Max(*args)``, ordering all pairs again. These
# two rebuild them through `_min_max` (the same expression, fewer sympy queries).


def _xreplace(expr: SymExpr, subs: Mapping[SymExpr, SymExpr]) -> SymExpr:
    """``expr.xreplace(subs)``."""
    if expr in subs:
        return subs[expr]
    if not expr.args:
        return expr
    args = [_xreplace(a, subs) for a in expr.args]
    if all(a is b for a, b in zip(args, expr.args, strict=True)):
        return expr
    if isinstance(expr, sympy.Max | sympy.Min):
        return _min_max(type(expr), args)
    return expr.func(*args)


def _expand(expr: SymExpr) -> SymExpr:
    """``sympy.expand(expr)``, each Min/Max argument expanded first."""
    if not expr.has(sympy.Max, sympy.Min):
        return sympy.expand(expr)
    args = [_expand(a) for a in expr.args]
    if isinstance(expr, sympy.Max | sympy.Min):
        return _min_max(type(expr), args)
    return sympy.expand(expr.func(*args))


def evaluate_formula(formula: str, bindings: Mapping[str, int]) -> float:
    """A report formula (``flops_formula``...) evaluated at a size binding.

    Raises:
        ValueError: a size the formula depends on is unbound.

    >>> evaluate_formula("2*M*N*K", {"M": 2, "N": 3, "K": 4})
    48.0
    """
    return evaluate(_parse_formula(formula), bindings)
