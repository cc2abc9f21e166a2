"""Generic traversals over IR nodes and integer evaluation of index expressions.

Contract: pure functions over `solar.ir.nodes`; none mutates its input. `map_exprs`
returns the very same object when nothing changed, so unchanged subtrees stay shared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import assert_never

from solar.diagnostics import IRVerifyError
from solar.ir.nodes import (
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Name,
    Program,
    Reduce,
    Stmt,
    Unary,
)

__all__ = [
    "accesses",
    "eval_int",
    "expr_children",
    "is_index_condition",
    "map_expr",
    "map_exprs",
    "resolve_sizes",
    "sizes_from_shapes",
    "walk_exprs",
    "walk_stmts",
]


def expr_children(expr: Expr) -> tuple[Expr, ...]:
    """Direct sub-expressions of ``expr``."""
    match expr:
        case IntLit() | FloatLit() | BoolLit() | Name():
            return ()
        case Access(indices=idx):
            return idx
        case Unary(operand=o) | Cast(operand=o):
            return (o,)
        case Binary(lhs=a, rhs=b):
            return (a, b)
        case Call(args=args):
            return args
        case _:
            assert_never(expr)


def map_expr(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Rewrite ``expr`` bottom-up: ``fn`` sees each node with its children already
    rewritten and returns a replacement, or ``None`` to keep it. Unchanged subtrees are
    returned as the same objects (spans kept).

    >>> from solar.ir import parse_expr, print_expr
    >>> e = map_expr(parse_expr("A[i + 1] * i"), lambda x: Name("j") if x == Name("i") else None)
    >>> print_expr(e)
    'A[j + 1] * j'
    """
    match expr:
        case Access(indices=idx):
            new_idx = tuple(map_expr(i, fn) for i in idx)
            changed = any(a is not b for a, b in zip(new_idx, idx, strict=True))
            new: Expr = dataclasses.replace(expr, indices=new_idx) if changed else expr
        case Binary(lhs=a, rhs=b):
            na, nb = map_expr(a, fn), map_expr(b, fn)
            new = expr if na is a and nb is b else dataclasses.replace(expr, lhs=na, rhs=nb)
        case Unary(operand=o) | Cast(operand=o):
            no = map_expr(o, fn)
            new = expr if no is o else dataclasses.replace(expr, operand=no)
        case Call(args=args):
            new_args = tuple(map_expr(a, fn) for a in args)
            changed = any(a is not b for a, b in zip(new_args, args, strict=True))
            new = dataclasses.replace(expr, args=new_args) if changed else expr
        case IntLit() | FloatLit() | BoolLit() | Name():
            new = expr
        case _:
            assert_never(expr)
    out = fn(new)
    return new if out is None else out


def is_index_condition(expr: Expr) -> bool:
    """True if ``expr`` is a condition on loop indices and sizes only (a guard): no
    tensor read, float, cast, true division or library call other than ``min``/``max``.

    >>> from solar.ir import parse_expr as p
    >>> is_index_condition(p("0 <= 2 * h + r - 1 and 2 * h + r - 1 < H"))
    True
    >>> is_index_condition(p("X[i] > 0.0"))
    False
    """
    for e in walk_exprs(expr):
        match e:
            case Access() | FloatLit() | Cast():
                return False
            case Call(func=f) if f not in ("min", "max"):
                return False
            case Binary(op="/"):
                return False
            case _:
                pass
    return True


def walk_exprs(expr: Expr) -> Iterator[Expr]:
    """Yield ``expr`` and all its sub-expressions, pre-order."""
    stack = [expr]
    while stack:
        e = stack.pop()
        yield e
        stack.extend(reversed(expr_children(e)))


def walk_stmts(body: tuple[Stmt, ...]) -> Iterator[tuple[Stmt, tuple[For | If, ...]]]:
    """Yield every statement with its enclosing loops and guards (outermost first)."""

    def go(
        stmts: tuple[Stmt, ...], ctx: tuple[For | If, ...]
    ) -> Iterator[tuple[Stmt, tuple[For | If, ...]]]:
        for s in stmts:
            yield s, ctx
            if isinstance(s, For | If):
                yield from go(s.body, (*ctx, s))

    return go(body, ())


def accesses(stmt: Assign | Reduce) -> tuple[tuple[Access, ...], Access]:
    """Return (reads, write) of a leaf statement; reads include index reads (gathers)."""
    reads = [e for e in walk_exprs(stmt.value) if isinstance(e, Access)]
    for idx in stmt.target.indices:
        reads += [e for e in walk_exprs(idx) if isinstance(e, Access)]
    if isinstance(stmt, Reduce):
        reads.append(stmt.target)
    return tuple(reads), stmt.target


def map_exprs(stmt: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    """Apply ``fn`` to every top-level expression of ``stmt`` (recursively into bodies)."""
    match stmt:
        case Assign(target=t, value=v) | Reduce(target=t, value=v):
            nt, nv = fn(t), fn(v)
            if nt is t and nv is v:
                return stmt
            assert isinstance(nt, Access)
            return dataclasses.replace(stmt, target=nt, value=nv)
        case For():
            lo, hi = fn(stmt.lo), fn(stmt.hi)
            body = tuple(map_exprs(s, fn) for s in stmt.body)
            if (
                lo is stmt.lo
                and hi is stmt.hi
                and all(a is b for a, b in zip(body, stmt.body, strict=True))
            ):
                return stmt
            return dataclasses.replace(stmt, lo=lo, hi=hi, body=body)
        case If():
            cond = fn(stmt.cond)
            body = tuple(map_exprs(s, fn) for s in stmt.body)
            if cond is stmt.cond and all(a is b for a, b in zip(body, stmt.body, strict=True)):
                return stmt
            return dataclasses.replace(stmt, cond=cond, body=body)
        case _:
            assert_never(stmt)


def eval_int(expr: Expr, env: Mapping[str, int]) -> int:
    """Evaluate an integer (affine, div/mod) expression under ``env``.

    Raises:
        KeyError: a name is not in ``env``.
        ValueError: the expression is not an integer expression.
        ZeroDivisionError: division or modulo by zero.

    >>> from solar.ir.parser import parse_expr
    >>> eval_int(parse_expr("(H - 3) // 2 + 1"), {"H": 9})
    4
    """
    match expr:
        case IntLit(value=v):
            return v
        case Name(name=n):
            return env[n]
        case Unary(op="-", operand=o):
            return -eval_int(o, env)
        case Binary(op=op, lhs=a, rhs=b) if op in ("+", "-", "*", "//", "%"):
            x, y = eval_int(a, env), eval_int(b, env)
            if op == "+":
                return x + y
            if op == "-":
                return x - y
            if op == "*":
                return x * y
            if op == "//":
                return x // y
            return x % y
        case Call(func="min" | "max" as f, args=(a, b)):
            x, y = eval_int(a, env), eval_int(b, env)
            return min(x, y) if f == "min" else max(x, y)
        case _:
            raise ValueError(f"not an integer expression: {type(expr).__name__}")


MAX_SIZE = 2**63 - 1
"""The largest size `resolve_sizes` accepts (E0221 above it)."""


def resolve_sizes(program: Program, overrides: Mapping[str, int] | None = None) -> dict[str, int]:
    """Evaluate every size declaration in order, applying ``overrides`` to free sizes.

    A free size is one declared as an integer literal; derived sizes (``Ho = (H-3)//2+1``)
    are recomputed from the bound free sizes.

    Raises:
        IRVerifyError: an override names an unknown or derived size (E0220), or a size
            evaluates to a non-positive value or one above `MAX_SIZE` (E0221).
    """
    overrides = dict(overrides or {})
    names = {s.name for s in program.sizes}
    for key in overrides:
        if key not in names:
            raise IRVerifyError(
                f"cannot bind unknown size `{key}`; sizes are: {', '.join(sorted(names))}",
                code="E0220",
            )
    env: dict[str, int] = {}
    for decl in program.sizes:
        if decl.name in overrides and not isinstance(decl.value, IntLit):
            # A derived size may be passed back with the value it derives to (so a full
            # binding returned by this function is itself a valid override).
            try:
                derived = eval_int(decl.value, env)
            except (KeyError, ValueError, ZeroDivisionError):
                derived = None
            if derived == int(overrides[decl.name]):
                del overrides[decl.name]
        if decl.name in overrides:
            if not isinstance(decl.value, IntLit):
                raise IRVerifyError(
                    f"size `{decl.name}` is derived from other sizes and cannot be bound",
                    code="E0220",
                    span=decl.span,
                )
            env[decl.name] = int(overrides[decl.name])
        else:
            try:
                env[decl.name] = eval_int(decl.value, env)
            except (KeyError, ValueError, ZeroDivisionError) as err:
                raise IRVerifyError(
                    f"size `{decl.name}` is not an integer expression of earlier sizes ({err})",
                    code="E0222",
                    span=decl.span,
                ) from None
        if env[decl.name] <= 0:
            raise IRVerifyError(
                f"size `{decl.name}` must be positive, got {env[decl.name]}",
                code="E0221",
                span=decl.span,
            )
        if env[decl.name] > MAX_SIZE:  # indices are int64; larger figures overflow floats
            raise IRVerifyError(
                f"size `{decl.name}` is above 2**63 - 1 (a {env[decl.name].bit_length()}-bit "
                "number)",
                code="E0221",
                span=decl.span,
            )
    return env


def sizes_from_shapes(program: Program, shapes: Mapping[str, tuple[int, ...]],
                      explicit: Mapping[str, int] | None = None) -> dict[str, int]:
    """Free sizes read off the shapes of the caller's inputs, plus ``explicit``.

    A dimension declared as a bare free size (``input A : f32[M, K]``) binds that size to
    the array's extent, unless ``explicit`` binds it already or an earlier tensor did;
    derived dimensions are left to `resolve_sizes` and the shape check (E0304), which
    reports any disagreement with the declared shape.

    >>> from solar.ir import parse_program
    >>> p = parse_program("solar-ir 1\\nprogram p\\nsize M = 4\\nsize K = 4\\n"
    ...     "input A : f32[M, K]\\noutput B : f32[M]\\n"
    ...     "kernel k {\\n  for i in 0 .. M {\\n    B[i] = A[i, 0]\\n  }\\n}\\n")
    >>> sizes_from_shapes(p, {"A": (3, 5)}, {"K": 5})
    {'K': 5, 'M': 3}
    """
    free = {d.name for d in program.sizes if isinstance(d.value, IntLit)}
    out = dict(explicit or {})
    for decl in program.tensors_with_role("input", "param"):
        shape = shapes.get(decl.name)
        if shape is None or len(shape) != len(decl.shape):
            continue
        for dim, extent in zip(decl.shape, shape, strict=True):
            if isinstance(dim, Name) and dim.name in free and dim.name not in out:
                out[dim.name] = int(extent)
    return out
