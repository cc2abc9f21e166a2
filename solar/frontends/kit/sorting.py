"""Sorts for the bounds: a JAX ``sort``'s rank counts removed (Note [Sort ranks] in
solar/frontends/jaxfe/ops_sort.py).

Contract: ``Program -> Program``; only the ``Reduce`` statements into kernel-locals
named ``sort_rank*`` (the JAX lowering's) and the loops left empty go. Only for bounds:
the program then no longer computes the sorted order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from solar.ir import Access, Assign, Expr, For, If, Kernel, Program, Reduce, Stmt
from solar.ir.traversal import map_expr, map_exprs, walk_stmts

__all__ = ["SORT_RANK", "sorts_as_copies"]

SORT_RANK = "sort_rank"
"""The name hint of a sort's rank local (Note [Sort ranks])."""


def sorts_as_copies(program: Program) -> Program:
    """``program`` with the rank counts of its sorts removed (Note [Sort ranks]): for
    the bounds only, each sort is the copy of its operands into its outputs in place
    (``out[.., i, ..] = op[.., i, ..]``: each operand read once, each output written
    once, no FLOPs); the program no longer computes the sorted order."""
    return dataclasses.replace(program, kernels=tuple(_uncounted(k) for k in program.kernels))


def _uncounted(kernel: Kernel) -> Kernel:
    ranks = {t.name for t in kernel.locals if t.name.startswith(SORT_RANK)}
    if not ranks:
        return kernel
    # where each rank starts: ``rank[.., i, ..] = i``, the position along the sort's axis
    axis: dict[str, int] = {}
    for stmt, _ in walk_stmts(kernel.body):
        if isinstance(stmt, Assign) and stmt.target.tensor in ranks:
            axis[stmt.target.tensor] = stmt.target.indices.index(stmt.value)

    def position(e: Expr) -> Expr | None:
        if isinstance(e, Access) and e.tensor in axis:
            return e.indices[axis[e.tensor]]
        return None

    def keep(stmts: Sequence[Stmt]) -> tuple[Stmt, ...]:
        kept: list[Stmt] = []
        for s in stmts:
            if isinstance(s, Assign | Reduce) and s.target.tensor in ranks:
                continue
            if isinstance(s, For | If):
                inner = keep(s.body)
                if not inner:
                    continue
                kept.append(dataclasses.replace(s, body=inner))
            else:
                kept.append(map_exprs(s, lambda e: map_expr(e, position)))
        return tuple(kept)

    return dataclasses.replace(
        kernel, locals=tuple(t for t in kernel.locals if t.name not in ranks),
        body=keep(kernel.body),
    )
