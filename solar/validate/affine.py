"""Integer linear forms and interval bounds of index expressions, for the executor.

Contract: pure functions over `solar.ir` expressions at a concrete size binding.
`linearize` returns ``sum(coef * var) + const`` over loop variables (sizes folded in),
or ``None`` when the expression is not affine (``i * j``, ``i // 2``, indirect reads).
`int_range` bounds an integer expression over boxes of loop-variable values; it is
used to size iteration boxes and to estimate memory and work before running.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from solar.ir import Access, Binary, Call, Expr, IntLit, Name, Unary

__all__ = ["Lin", "free_names", "int_range", "linearize", "reads_tensor"]


@dataclass(frozen=True, slots=True)
class Lin:
    """``sum(c * v for v, c in coefs) + const`` with no zero coefficients."""

    coefs: tuple[tuple[str, int], ...]
    const: int

    def coef(self, var: str) -> int:
        """The coefficient of ``var`` (0 if absent)."""
        return next((c for v, c in self.coefs if v == var), 0)

    def vars(self) -> frozenset[str]:
        """Variables with a nonzero coefficient."""
        return frozenset(v for v, _ in self.coefs)


def _lin(coefs: Mapping[str, int], const: int) -> Lin:
    return Lin(tuple(sorted((v, c) for v, c in coefs.items() if c != 0)), const)


def _add(a: Lin, b: Lin, scale: int) -> Lin:
    coefs = dict(a.coefs)
    for v, c in b.coefs:
        coefs[v] = coefs.get(v, 0) + scale * c
    return _lin(coefs, a.const + scale * b.const)


def linearize(expr: Expr, sizes: Mapping[str, int]) -> Lin | None:
    """The linear form of ``expr`` over loop variables, or ``None`` if not affine.

    Names bound in ``sizes`` are constants; every other name is a loop variable.

    >>> from solar.ir import parse_expr
    >>> linearize(parse_expr("2 * (i + N) - j // 1"), {"N": 4}) is None
    True
    >>> linearize(parse_expr("2 * (i + N) - j"), {"N": 4})
    Lin(coefs=(('i', 2), ('j', -1)), const=8)
    """
    match expr:
        case IntLit(value=v):
            return Lin((), v)
        case Name(name=n):
            return Lin((), sizes[n]) if n in sizes else Lin(((n, 1),), 0)
        case Unary(op="-", operand=o):
            inner = linearize(o, sizes)
            return None if inner is None else _add(Lin((), 0), inner, -1)
        case Binary(op="+" | "-" as op, lhs=a, rhs=b):
            la, lb = linearize(a, sizes), linearize(b, sizes)
            if la is None or lb is None:
                return None
            return _add(la, lb, 1 if op == "+" else -1)
        case Binary(op="*", lhs=a, rhs=b):
            la, lb = linearize(a, sizes), linearize(b, sizes)
            if la is None or lb is None:
                return None
            if not la.coefs:
                return _add(Lin((), 0), lb, la.const)
            if not lb.coefs:
                return _add(Lin((), 0), la, lb.const)
            return None
        case Binary(op="//" | "%" as op, lhs=a, rhs=b):
            la, lb = linearize(a, sizes), linearize(b, sizes)
            if la is None or lb is None or la.coefs or lb.coefs or lb.const == 0:
                return None
            return Lin((), la.const // lb.const if op == "//" else la.const % lb.const)
        case Call(func="min" | "max" as f, args=(a, b)):
            la, lb = linearize(a, sizes), linearize(b, sizes)
            if la is None or lb is None or la.coefs or lb.coefs:
                return None
            return Lin((), min(la.const, lb.const) if f == "min" else max(la.const, lb.const))
        case _:
            return None


def free_names(expr: Expr) -> frozenset[str]:
    """Every `Name` used as a value in ``expr`` (including inside subscripts)."""
    out: set[str] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        match e:
            case Name(name=n):
                out.add(n)
            case Access(indices=idx):
                stack.extend(idx)
            case Unary(operand=o):
                stack.append(o)
            case Binary(lhs=a, rhs=b):
                stack += [a, b]
            case Call(args=args):
                stack.extend(args)
            case _:
                operand = getattr(e, "operand", None)
                if operand is not None:
                    stack.append(operand)
    return frozenset(out)


def reads_tensor(expr: Expr) -> bool:
    """True when ``expr`` contains a tensor access."""
    stack = [expr]
    while stack:
        e = stack.pop()
        match e:
            case Access():
                return True
            case Unary(operand=o):
                stack.append(o)
            case Binary(lhs=a, rhs=b):
                stack += [a, b]
            case Call(args=args):
                stack.extend(args)
            case _:
                operand = getattr(e, "operand", None)
                if operand is not None:
                    stack.append(operand)
    return False


def int_range(
    expr: Expr, sizes: Mapping[str, int], ranges: Mapping[str, tuple[int, int]]
) -> tuple[int, int] | None:
    """Inclusive ``(lo, hi)`` bounds of an integer expression over a box of variables.

    Args:
        expr: an integer expression (affine, ``//``/``%`` by constants, ``min``/``max``).
        sizes: the size binding.
        ranges: inclusive value ranges of loop variables.

    Returns:
        Bounds that contain every value the expression takes, or ``None`` when the
        expression reads tensors or uses an unknown name.

    >>> from solar.ir import parse_expr
    >>> int_range(parse_expr("i + 1"), {}, {"i": (0, 9)})
    (1, 10)
    """
    match expr:
        case IntLit(value=v):
            return v, v
        case Name(name=n):
            if n in sizes:
                return sizes[n], sizes[n]
            return ranges.get(n)
        case Unary(op="-", operand=o):
            r = int_range(o, sizes, ranges)
            return None if r is None else (-r[1], -r[0])
        case Binary(op="+" | "-" | "*" as op, lhs=a, rhs=b):
            ra, rb = int_range(a, sizes, ranges), int_range(b, sizes, ranges)
            if ra is None or rb is None:
                return None
            if op == "+":
                return ra[0] + rb[0], ra[1] + rb[1]
            if op == "-":
                return ra[0] - rb[1], ra[1] - rb[0]
            products = [x * y for x in ra for y in rb]
            return min(products), max(products)
        case Binary(op="//", lhs=a, rhs=b):
            ra, rb = int_range(a, sizes, ranges), int_range(b, sizes, ranges)
            if ra is None or rb is None or rb[0] <= 0:
                return None
            quotients = [x // y for x in ra for y in rb]
            return min(quotients), max(quotients)
        case Binary(op="%", lhs=_, rhs=b):
            rb = int_range(b, sizes, ranges)
            if rb is None or rb[0] <= 0:
                return None
            return 0, rb[1] - 1
        case Call(func="min" | "max" as f, args=(a, b)):
            ra, rb = int_range(a, sizes, ranges), int_range(b, sizes, ranges)
            if ra is None or rb is None:
                return None
            pick = min if f == "min" else max
            return pick(ra[0], rb[0]), pick(ra[1], rb[1])
        case _:
            return None
