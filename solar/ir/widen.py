"""Widening a program's floating-point precision (for the float64 re-check).

Contract: ``Program -> Program`` with every ``f32`` (tensor declarations, kernel locals
and ``f32(...)`` casts) made ``f64``; integer and bool types are untouched. The result
computes the same function in a wider type, which is what validation's float64
re-check executes (Note [Float64 re-check] in solar/pipeline/validation.py). Only a program whose
floating types are all ``f32`` or ``f64`` is widened meaningfully: a narrower type
(``f16``, ``bf16``, ``f8*``) rounds on purpose, and widening it would change what the
program computes (`float_dtypes` lets the caller check).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from solar.ir.nodes import (
    Access,
    Assign,
    Binary,
    Call,
    Cast,
    DType,
    Expr,
    Kernel,
    Program,
    Reduce,
    Stmt,
    TensorDecl,
    Unary,
)
from solar.ir.traversal import map_exprs, walk_exprs, walk_stmts

__all__ = ["float_dtypes", "widen_to_f64"]

_DOC_PROGRAM = """solar-ir 1
program p
input x : f32[2]
output y : f32[2]
kernel k {{
  for i in 0 .. 2 {{
    y[i] = {value}
  }}
}}
"""


def _decls(program: Program) -> Iterator[TensorDecl]:
    yield from program.tensors
    for kernel in program.kernels:
        yield from kernel.locals


def float_dtypes(program: Program) -> frozenset[DType]:
    """The floating types a program declares or casts to.

    >>> from solar.ir import parse_program
    >>> p = parse_program(_DOC_PROGRAM.format(value="f16(x[i])"))
    >>> sorted(float_dtypes(p))
    [<DType.F16: 'f16'>, <DType.F32: 'f32'>]
    """
    found = {d.dtype for d in _decls(program) if d.dtype.is_float}
    for kernel in program.kernels:
        for stmt, _ in walk_stmts(kernel.body):
            if isinstance(stmt, Assign | Reduce):
                for e in walk_exprs(stmt.value):
                    if isinstance(e, Cast) and e.dtype.is_float:
                        found.add(e.dtype)
    return frozenset(found)


def _widen_expr(e: Expr) -> Expr:
    match e:
        case Cast(dtype=DType.F32, operand=o):
            return dataclasses.replace(e, dtype=DType.F64, operand=_widen_expr(o))
        case Cast(operand=o) | Unary(operand=o):
            return dataclasses.replace(e, operand=_widen_expr(o))
        case Binary(lhs=a, rhs=b):
            return dataclasses.replace(e, lhs=_widen_expr(a), rhs=_widen_expr(b))
        case Call(args=args):
            return dataclasses.replace(e, args=tuple(_widen_expr(a) for a in args))
        case Access(indices=idx):
            return dataclasses.replace(e, indices=tuple(_widen_expr(i) for i in idx))
        case _:
            return e


def _widen_decl(decl: TensorDecl) -> TensorDecl:
    return dataclasses.replace(decl, dtype=DType.F64) if decl.dtype == DType.F32 else decl


def _widen_kernel(kernel: Kernel) -> Kernel:
    body: tuple[Stmt, ...] = tuple(map_exprs(s, _widen_expr) for s in kernel.body)
    return dataclasses.replace(
        kernel, locals=tuple(_widen_decl(d) for d in kernel.locals), body=body
    )


def widen_to_f64(program: Program) -> Program:
    """``program`` with ``f32`` made ``f64`` everywhere (see the module docstring).

    >>> from solar.ir import parse_program, print_program
    >>> p = widen_to_f64(parse_program(_DOC_PROGRAM.format(value="f32(x[i]) * 2.0")))
    >>> [line.strip() for line in print_program(p).splitlines() if "x" in line]
    ['input x : f64[2]', 'y[i] = f64(x[i]) * 2.0']
    """
    return dataclasses.replace(
        program,
        tensors=tuple(_widen_decl(d) for d in program.tensors),
        kernels=tuple(_widen_kernel(k) for k in program.kernels),
    )
