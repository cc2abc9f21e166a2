"""Interval bounds and name sets of index expressions, for the executor.

Contract: pure functions over `solar.ir` expressions at a concrete size binding.
`int_range` bounds an integer expression over boxes of loop-variable values; it is
used to size iteration boxes and to estimate memory and work before running. Linear
forms of subscripts are `solar.ir.Lin` (built with `solar.ir.linear_form`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeAlias

from solar.ir import Access, Binary, Call, Expr, IntLit, Name, Unary, walk_exprs

__all__ = ["free_names", "int_range", "reads_tensor"]

Range: TypeAlias = tuple[int, int]
"""Inclusive ``(lo, hi)`` bounds of an integer."""


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
    expr: Expr, sizes: Mapping[str, int], ranges: Mapping[str, Range]
) -> Range | None:
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
        case Binary(op="%", rhs=b):
            return _mod_range(int_range(b, sizes, ranges))
        case Binary(op=op, lhs=a, rhs=b) if op in _RANGE_BINARY:
            return _combine(_RANGE_BINARY[op], a, b, sizes, ranges)
        case Call(func=f, args=(a, b)) if f in _RANGE_CALLS:
            return _combine(_RANGE_CALLS[f], a, b, sizes, ranges)
        case _:
            return None


def _combine(
    op: Callable[[Range, Range], Range | None], a: Expr, b: Expr,
    sizes: Mapping[str, int], ranges: Mapping[str, Range],
) -> Range | None:
    ra, rb = int_range(a, sizes, ranges), int_range(b, sizes, ranges)
    return None if ra is None or rb is None else op(ra, rb)


def _add_range(ra: Range, rb: Range) -> Range:
    return ra[0] + rb[0], ra[1] + rb[1]


def _sub_range(ra: Range, rb: Range) -> Range:
    return ra[0] - rb[1], ra[1] - rb[0]


def _mul_range(ra: Range, rb: Range) -> Range:
    products = [x * y for x in ra for y in rb]
    return min(products), max(products)


def _floordiv_range(ra: Range, rb: Range) -> Range | None:
    if rb[0] <= 0:
        return None
    quotients = [x // y for x in ra for y in rb]
    return min(quotients), max(quotients)


def _mod_range(rb: Range | None) -> Range | None:
    if rb is None or rb[0] <= 0:
        return None
    return 0, rb[1] - 1


def _min_range(ra: Range, rb: Range) -> Range:
    return min(ra[0], rb[0]), min(ra[1], rb[1])


def _max_range(ra: Range, rb: Range) -> Range:
    return max(ra[0], rb[0]), max(ra[1], rb[1])


_RANGE_BINARY: Mapping[str, Callable[[Range, Range], Range | None]] = {
    "+": _add_range,
    "-": _sub_range,
    "*": _mul_range,
    "//": _floordiv_range,
}
_RANGE_CALLS: Mapping[str, Callable[[Range, Range], Range | None]] = {
    "min": _min_range,
    "max": _max_range,
}
