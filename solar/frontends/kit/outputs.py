"""Outputs every program needs written: the zero-size outputs no kernel writes.

Contract: ``Program -> Program`` (unverified in, unverified out); adds at most one
kernel, ``empty_output``, first, and changes nothing else.
"""

from __future__ import annotations

import dataclasses

from solar.frontends.kit.dtypes import zero
from solar.ir import (
    Access,
    Assign,
    For,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    accesses,
    eval_int,
    resolve_sizes,
    walk_stmts,
)

__all__ = ["write_empty_outputs"]


def write_empty_outputs(program: Program) -> Program:
    """Give every zero-size output that no kernel writes an empty write, first.

    An emitter skips loop nests that run no iteration, so ``jnp.zeros((0, 3)) @ w`` or
    ``x[:, :0].sum(-1)`` leaves its (empty) output unwritten, which the verifier
    rejects (E0217). The new ``empty_output`` kernel writes it under its zero-trip
    loops: no work, no traffic. Both frontends run it on the program they build.

    >>> from solar.ir import parse_program, print_program
    >>> p = write_empty_outputs(parse_program('''solar-ir 1
    ... program t
    ... input x0 : f32[3]
    ... output y0 : f32[0, 3]
    ... output y1 : f32[3]
    ... kernel k { for i in 0 .. 3 { y1[i] = x0[i] } }'''))
    >>> print(print_program(p).split("kernel")[1].strip())
    empty_output {
      for i0 in 0 .. 0 {
        for i1 in 0 .. 3 {
          y0[i0, i1] = 0.0
        }
      }
    }
    """
    written = {
        accesses(stmt)[1].tensor
        for kernel in program.kernels
        for stmt, _ctx in walk_stmts(kernel.body)
        if isinstance(stmt, Assign | Reduce)
    }
    sizes = resolve_sizes(program)
    body: list[Stmt] = []
    for t in program.tensors:
        if t.role != "output" or t.name in written:
            continue
        if all(eval_int(s, sizes) != 0 for s in t.shape):
            continue
        idx = tuple(Name(f"i{k}") for k in range(len(t.shape)))
        stmt: Stmt = Assign(Access(t.name, idx), zero(t.dtype))
        for k in reversed(range(len(t.shape))):
            stmt = For(f"i{k}", IntLit(0), t.shape[k], (stmt,))
        body.append(stmt)
    if not body:
        return program
    kernel = Kernel("empty_output", (), tuple(body))
    return dataclasses.replace(program, kernels=(kernel, *program.kernels))
