"""Interval bounds and name sets of index expressions, for the executor.

Contract: pure functions over `solar.ir` expressions at a concrete size binding.
`int_range` bounds an integer expression over boxes of loop-variable values; it is
used to size iteration boxes and to estimate memory and work before running. Linear
forms of subscripts are `solar.ir.Lin` (built with `solar.ir.linear_form`).
"""

from __future__ import annotations

from collections.abc import Mapping

from solar.ir import Access, Binary, Call, Expr, IntLit, Name, Unary, walk_exprs

__all__ = ["free_names", "int_range", "reads_tensor"]


def free_names(expr: Expr) -> frozenset[str]:
    """Every `Name` used as a value in ``expr`` (including inside subscripts).

    >>> from solar.ir import parse_expr
    >>> sorted(free_names(parse_expr("A[i + N, j] * k")))
    ['N', 'i', 'j', 'k']
    """
    return frozenset(e.name for e in walk_exprs(expr) if isinstance(e, Name))


def reads_tensor(expr: Expr, tensor: str | None = None) -> bool:
    """True when ``expr`` reads ``tensor`` (any tensor when ``None``), subscripts included.

    >>> from solar.ir import parse_expr
    >>> e = parse_expr("A[B[i]] + 1")
    >>> reads_tensor(e), reads_tensor(e, "B"), reads_tensor(e, "C")
    (True, True, False)
    """
    return any(
        isinstance(e, Access) and (tensor is None or e.tensor == tensor) for e in walk_exprs(expr)
    )


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
