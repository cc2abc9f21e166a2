"""Rank-dependent literals: per-rank programs that differ only in numbers, as one
program of ``rank``.

Contract: ``programs of ranks 0 .. n-1 -> one program or None`` (`fit_rank_literals`).
A rank that slices its part of a tensor (``x[rank * 4:(rank + 1) * 4]``) or fills one
with its index (``torch.full(..., rank)``) lowers to kernels whose literals differ
across ranks: an index offset (``x0[i0 + 8, i1]`` on rank 2, ``x0[i0, i1]`` on rank 0,
whose zero offset the printer leaves out), a scalar, a loop bound. When the programs
have the same declarations and the same kernels up to such literals, and each literal
is one affine function ``a + b * rank`` of the rank (integers for integer literals,
floats for float ones), the result is rank 0's program with each differing literal
replaced by that expression; otherwise ``None`` (the caller reports E0552). The fit
uses every rank of the world, so it is exact for the world the ranks were captured at
(docs/distributed.md, "Merging the ranks").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from solar.ir import RANK, Binary, Expr, FloatLit, IntLit, Name, Program, Unary, lit

__all__ = ["fit_rank_literals"]


class _DifferError(Exception):
    """The ranks differ in something no affine expression of ``rank`` gives."""


def fit_rank_literals(programs: Sequence[Program]) -> Program | None:
    """Rank 0's program with its rank-dependent literals written as ``a + b * rank``,
    or ``None`` when the programs differ otherwise (or not affinely).

    >>> from solar.ir import parse_program, print_program
    >>> def prog(k): return parse_program(
    ...     "solar-ir 1\\nprogram p\\ninput x : f32[8]\\noutput y : f32[2]\\n"
    ...     f"kernel k {{\\n  for i in 0 .. 2 {{\\n    y[i] = x[i{k}] * 2.0\\n  }}\\n}}\\n")
    >>> fitted = fit_rank_literals([prog(""), prog(" + 2"), prog(" + 4")])
    >>> [ln.strip() for ln in print_program(fitted).splitlines() if "=" in ln]
    ['y[i] = x[i + 2 * rank] * 2.0']
    >>> fit_rank_literals([prog(""), prog(" + 2"), prog(" + 5")]) is None
    True
    """
    first = programs[0]
    rest = dataclasses.replace(first, kernels=())
    if any(dataclasses.replace(p, kernels=()) != rest for p in programs[1:]):
        return None
    try:
        kernels = _unify([p.kernels for p in programs])
    except _DifferError:
        return None
    return dataclasses.replace(first, kernels=kernels)  # type: ignore[arg-type]


def _number(node: object) -> int | float | None:
    """The value of a literal (``-3`` is ``Unary('-', IntLit(3))``), else None."""
    if isinstance(node, Unary) and node.op == "-":
        inner = _number(node.operand)
        return None if inner is None else -inner
    if isinstance(node, IntLit | FloatLit):
        return node.value
    return None


def _offset(node: object) -> tuple[object, int]:
    """``(base, k)`` of ``base + k`` or ``base - k`` (``k`` an integer literal), else
    ``(node, 0)``: the printer writes a zero offset as nothing."""
    if isinstance(node, Binary) and node.op in ("+", "-"):
        k = _number(node.rhs)
        if isinstance(k, int):
            return node.lhs, k if node.op == "+" else -k
    return node, 0


def _unify(nodes: Sequence[object]) -> object:
    """One node for every rank's ``nodes``; raises `_DifferError`."""
    first = nodes[0]
    if all(n == first for n in nodes[1:]):
        return first
    values = [_number(n) for n in nodes]
    if all(v is not None for v in values):
        return _affine([v for v in values if v is not None])
    if isinstance(first, tuple):
        if any(not isinstance(n, tuple) or len(n) != len(first) for n in nodes):
            raise _DifferError
        return tuple(_unify([n[k] for n in nodes]) for k in range(len(first)))  # type: ignore[index]
    if isinstance(first, Binary | Name) or any(type(n) is not type(first) for n in nodes):
        split = [_offset(n) for n in nodes]
        if any(k != split[0][1] for _, k in split) or any(type(n) is not type(first)
                                                             for n in nodes):
            base = _unify([b for b, _ in split])
            shift = _affine([k for _, k in split])
            if shift == IntLit(0):
                return base
            return Binary("+", base, shift)  # type: ignore[arg-type]
    if not dataclasses.is_dataclass(first) or any(type(n) is not type(first) for n in nodes):
        raise _DifferError
    changes = {
        f.name: _unify([getattr(n, f.name) for n in nodes])
        for f in dataclasses.fields(first)
        if f.compare
    }
    return dataclasses.replace(first, **changes)  # type: ignore[type-var]


def _affine(values: Sequence[int | float]) -> Expr:
    """``a + b * rank`` through ``values[r]`` for every rank ``r``; raises `_DifferError`."""
    a: int | float = values[0]
    b: int | float = values[1] - values[0] if len(values) > 1 else 0
    if all(isinstance(v, int) for v in values):
        if any(v != a + b * r for r, v in enumerate(values)):
            raise _DifferError
    elif all(isinstance(v, float) for v in values):
        if any(not math.isclose(v, a + b * r, rel_tol=1e-9, abs_tol=1e-12)
               for r, v in enumerate(values)):
            raise _DifferError
    else:
        raise _DifferError
    if b == 0:
        return lit(a)
    term: Expr = Name(RANK) if abs(b) == 1 else Binary("*", lit(abs(b)), Name(RANK))
    if a == 0:
        return Unary("-", term) if b < 0 else term
    return Binary("-" if b < 0 else "+", lit(a), term)
