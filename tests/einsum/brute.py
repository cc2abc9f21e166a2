"""Brute-force reference: run a program's loop nests point by point and record accesses.

For tests only: small sizes. Value-dependent conditions and gathers are not
supported (the samples that use gathers are checked separately).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from solar.ir import (
    Access,
    Assign,
    Binary,
    BoolLit,
    Expr,
    For,
    If,
    Program,
    Reduce,
    Unary,
    eval_int,
    walk_exprs,
    walk_stmts,
)


def eval_cond(expr: Expr, env: Mapping[str, int]) -> bool:
    """Evaluate an affine condition."""
    match expr:
        case BoolLit(value=v):
            return v
        case Binary(op="and", lhs=a, rhs=b):
            return eval_cond(a, env) and eval_cond(b, env)
        case Binary(op="or", lhs=a, rhs=b):
            return eval_cond(a, env) or eval_cond(b, env)
        case Unary(op="not", operand=o):
            return not eval_cond(o, env)
        case Binary(op=op, lhs=a, rhs=b):
            x, y = eval_int(a, env), eval_int(b, env)
            return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y,
                    "!=": x != y}[op]
        case _:
            raise ValueError("not an affine condition")


@dataclass
class StmtRecord:
    """What one leaf statement did."""

    points: int = 0
    reads: dict[str, set[tuple[int, ...]]] = field(default_factory=dict)
    writes: dict[str, set[tuple[int, ...]]] = field(default_factory=dict)


def _points(stmt_path: tuple[For | If, ...], env: dict[str, int]) -> Iterator[dict[str, int]]:
    if not stmt_path:
        yield env
        return
    head, rest = stmt_path[0], stmt_path[1:]
    if isinstance(head, For):
        lo, hi = eval_int(head.lo, env), eval_int(head.hi, env)
        for v in range(lo, hi, head.step):
            yield from _points(rest, {**env, head.var: v})
    elif eval_cond(head.cond, env):
        yield from _points(rest, env)


def run(program: Program, sizes: Mapping[str, int]) -> list[list[StmtRecord]]:
    """Per kernel, per leaf statement (pre-order), the points and element sets."""
    out = []
    for kernel in program.kernels:
        recs = []
        for stmt, ctx in walk_stmts(kernel.body):
            if not isinstance(stmt, Assign | Reduce):
                continue
            rec = StmtRecord()
            accs = [e for e in walk_exprs(stmt.value) if isinstance(e, Access)]
            if isinstance(stmt, Reduce):
                accs.append(stmt.target)
            for env in _points(ctx, dict(sizes)):
                rec.points += 1
                for a in accs:
                    rec.reads.setdefault(a.tensor, set()).add(
                        tuple(eval_int(i, env) for i in a.indices))
                rec.writes.setdefault(stmt.target.tensor, set()).add(
                    tuple(eval_int(i, env) for i in stmt.target.indices))
            recs.append(rec)
        out.append(recs)
    return out
