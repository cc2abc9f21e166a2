"""Random inputs for a program: values of the declared dtypes, valid subscripts.

Contract: ``(Program, sizes, rng) -> dict[name, ndarray]`` for every input and param,
deterministic for a seeded generator. Floats are standard normal, rounded to their
dtype (returned as float16 for ``f16`` and float32 for bf16/fp8). An integer tensor
read inside a subscript (``E[idx[b, s], d]``, ``E[idx[i] + 1]``) draws from the range
that keeps every such subscript inside the dimension it indexes (and is non-negative);
other integers are small (``0 .. 7``); bools are fair coins.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from solar.ir import (
    Access,
    Assign,
    Binary,
    DType,
    Expr,
    For,
    If,
    IntLit,
    Program,
    Reduce,
    Stmt,
    Unary,
    eval_int,
    resolve_sizes,
    walk_exprs,
    walk_stmts,
)
from solar.validate.dtypes import output_array, round_to_dtype

__all__ = ["index_ranges", "random_inputs"]

SMALL_INT_RANGE = (0, 8)


def _offset(index: Expr) -> tuple[Access, int] | None:
    """``A[...] + c`` / ``c + A[...]`` / ``A[...] - c`` as ``(A[...], c)``."""
    match index:
        case Access():
            return index, 0
        case (
            Binary(op="+", lhs=Access() as a, rhs=IntLit(value=c))
            | Binary(op="+", lhs=IntLit(value=c), rhs=Access() as a)
        ):
            return a, c
        case Binary(op="-", lhs=Access() as a, rhs=IntLit(value=c)):
            return a, -c
        case Binary(op="+", lhs=Access() as a, rhs=Unary(op="-", operand=IntLit(value=c))):
            return a, -c
        case _:
            return None


def _exprs(stmt: Stmt) -> list[Expr]:
    match stmt:
        case Assign(target=t, value=v) | Reduce(target=t, value=v):
            return [t, v]
        case For(lo=lo, hi=hi):
            return [lo, hi]
        case If(cond=c):
            return [c]
        case _:
            return []


def index_ranges(program: Program, sizes: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Half-open value ranges of integer tensors read inside subscripts.

    Args:
        program: the program.
        sizes: a resolved size binding.

    Returns:
        Tensor name -> ``(lo, hi)`` such that every subscript it feeds stays in bounds
        (the intersection over all its uses).
    """
    ranges: dict[str, tuple[int, int]] = {}
    for kernel in program.kernels:
        for stmt, _ in walk_stmts(kernel.body):
            for root in _exprs(stmt):
                for acc in (e for e in walk_exprs(root) if isinstance(e, Access)):
                    try:
                        shape = program.tensor(acc.tensor).shape
                    except KeyError:
                        continue
                    for dim, index in zip(shape, acc.indices, strict=False):
                        found = _offset(index)
                        if found is None:
                            for inner in (e for e in walk_exprs(index) if isinstance(e, Access)):
                                lo, hi = ranges.get(inner.tensor, (0, 1 << 62))
                                extent = eval_int(dim, sizes)
                                ranges[inner.tensor] = (max(lo, 0), min(hi, extent))
                            continue
                        inner, shift = found
                        extent = eval_int(dim, sizes)
                        lo, hi = ranges.get(inner.tensor, (0, 1 << 62))
                        ranges[inner.tensor] = (max(lo, -shift), min(hi, extent - shift))
    return {k: (lo, max(lo + 1, hi)) for k, (lo, hi) in ranges.items()}


def random_inputs(
    program: Program, sizes: Mapping[str, int] | None, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Random arrays for every input and param of ``program`` (module docstring).

    Args:
        program: the program.
        sizes: overrides of free sizes (defaults otherwise).
        rng: the random generator.

    Returns:
        Name -> array of the declared shape.

    >>> from solar.ir import parse_program
    >>> p = parse_program('''solar-ir 1
    ... program g
    ... size V = 5
    ... input idx : i64[3]
    ... param E : f32[V]
    ... output Y : f32[3]
    ... kernel k { for i in 0 .. 3 { Y[i] = E[idx[i]] } }
    ... ''')
    >>> x = random_inputs(p, None, np.random.default_rng(0))
    >>> bool(((0 <= x["idx"]) & (x["idx"] < 5)).all()), x["E"].dtype
    (True, dtype('float32'))
    """
    bound = resolve_sizes(program, sizes)
    ranges = index_ranges(program, bound)
    out: dict[str, np.ndarray] = {}
    for decl in program.tensors_with_role("input", "param"):
        shape = tuple(eval_int(d, bound) for d in decl.shape)
        if decl.dtype.is_float:
            normal = rng.standard_normal(shape)
            out[decl.name] = output_array(round_to_dtype(normal, decl.dtype), decl.dtype)
        elif decl.dtype is DType.BOOL:
            out[decl.name] = rng.random(shape) < 0.5
        else:
            lo, hi = ranges.get(decl.name, SMALL_INT_RANGE)
            values = rng.integers(lo, hi, size=shape)
            out[decl.name] = output_array(round_to_dtype(values, decl.dtype), decl.dtype)
    return out
