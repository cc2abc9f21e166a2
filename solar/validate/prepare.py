"""Execution plans: loop axes, loops that cannot be fissioned, privatised locals.

Contract: ``(Program, sizes) -> PreparedProgram``, pure. The vectorised executor runs a
plain loop's body statement by statement over all its iterations (loop fission). That
is what the IR promises, but IR from an LLM sometimes reuses a kernel-local scratch
element across iterations of a plain loop (``acc[] = 0.0; for k {acc[] += ...};
C[i, j] = acc[]``). `prepare_program` finds such loops (Note [Fission hazards]) and

* *privatises* the local when that is provably safe: the local gets one extra leading
  dimension indexed by the loop variable, so every iteration has its own copy; or
* otherwise marks the loop *sequential*: it then runs one iteration at a time (the
  statements inside are still vectorised over inner loops), which is always correct.

Note [Fission hazards]
    A plain loop ``for v`` has a hazard on tensor ``T`` when the loop body assigns
    ``T`` at a subscript that does not mention ``v`` and the body also reads or
    reduces into ``T``, or when it reduces into ``T`` without ``v`` and also reads
    ``T`` explicitly (a running sum). Privatisation needs ``T`` to be a local of the
    kernel used nowhere outside the loop, and the first statement touching ``T`` in
    the body to be an unconditional assignment that does not read ``T``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    Cast,
    Expr,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    Unary,
    map_exprs,
    walk_stmts,
)
from solar.validate.affine import free_names, int_range, reads_tensor

__all__ = ["KernelPlan", "PreparedProgram", "prepare_program"]

logger = logging.getLogger(__name__)

_MAX_ROUNDS = 64


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """How to run one kernel.

    Attributes:
        ndim: number of domain axes (the deepest loop nesting).
        axis: loop node id -> its domain axis (its nesting depth).
        sequential: ids of plain loops that must run one iteration at a time.
    """

    ndim: int
    axis: Mapping[int, int]
    sequential: frozenset[int]


@dataclass(frozen=True, slots=True)
class PreparedProgram:
    """A program ready to run at one size binding.

    Attributes:
        program: the program, with privatised locals rewritten.
        plans: one plan per kernel, in launch order.
        privatized: ``kernel.local`` names that received a private dimension.
    """

    program: Program
    plans: tuple[KernelPlan, ...]
    privatized: tuple[str, ...]


def _stmt_reads(stmt: Stmt, tensor: str) -> bool:
    """Explicit reads of ``tensor`` by one statement (not its nested body)."""
    match stmt:
        case Assign(target=t, value=v) | Reduce(target=t, value=v):
            return reads_tensor(v, tensor) or any(reads_tensor(i, tensor) for i in t.indices)
        case For(lo=lo, hi=hi):
            return reads_tensor(lo, tensor) or reads_tensor(hi, tensor)
        case If(cond=c):
            return reads_tensor(c, tensor)
        case _:
            return False


def _hazards(loop: For) -> list[str]:
    """Tensors with a fission hazard in a plain loop (Note [Fission hazards])."""
    stmts = list(walk_stmts(loop.body))
    found: list[str] = []
    written = {s.target.tensor for s, _ in stmts if isinstance(s, Assign | Reduce)}
    for tensor in sorted(written):
        indep_assign = indep_reduce = any_reduce = False
        for s, _ in stmts:
            if isinstance(s, Assign | Reduce) and s.target.tensor == tensor:
                mentions = any(loop.var in free_names(i) for i in s.target.indices)
                any_reduce = any_reduce or isinstance(s, Reduce)
                if not mentions:
                    indep_assign = indep_assign or isinstance(s, Assign)
                    indep_reduce = indep_reduce or isinstance(s, Reduce)
        reads = any(_stmt_reads(s, tensor) for s, _ in stmts)
        if (indep_assign and (reads or any_reduce)) or (indep_reduce and reads):
            found.append(tensor)
    return found


def _privatizable(kernel: Kernel, loop: For, tensor: str) -> bool:
    if tensor not in {d.name for d in kernel.locals}:
        return False
    inside = {id(s) for s, _ in walk_stmts(loop.body)}
    for s, _ in walk_stmts(kernel.body):
        if id(s) in inside or s is loop:
            continue
        touches = _stmt_reads(s, tensor) or (
            isinstance(s, Assign | Reduce) and s.target.tensor == tensor
        )
        if touches:
            return False
    for s, ctx in walk_stmts(loop.body):
        writes = isinstance(s, Assign | Reduce) and s.target.tensor == tensor
        if not (writes or _stmt_reads(s, tensor)):
            continue
        return (
            isinstance(s, Assign)
            and writes
            and not _stmt_reads(s, tensor)
            and not any(isinstance(c, If) for c in ctx)
        )
    return False


def _prefix(expr: Expr, tensor: str, index: Expr) -> Expr:
    match expr:
        case Access(tensor=t, indices=idx):
            new_idx = tuple(_prefix(i, tensor, index) for i in idx)
            if t == tensor:
                return dataclasses.replace(expr, indices=(index, *new_idx))
            return dataclasses.replace(expr, indices=new_idx)
        case Unary(operand=o) | Cast(operand=o):
            return dataclasses.replace(expr, operand=_prefix(o, tensor, index))
        case Binary(lhs=a, rhs=b):
            return dataclasses.replace(
                expr, lhs=_prefix(a, tensor, index), rhs=_prefix(b, tensor, index)
            )
        case Call(args=args):
            return dataclasses.replace(expr, args=tuple(_prefix(a, tensor, index) for a in args))
        case _:
            return expr


def _replace(body: tuple[Stmt, ...], old: Stmt, new: Stmt) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        if s is old:
            out.append(new)
        elif isinstance(s, For | If):
            out.append(dataclasses.replace(s, body=_replace(s.body, old, new)))
        else:
            out.append(s)
    return tuple(out)


def _loop_ranges(
    body: tuple[Stmt, ...], sizes: Mapping[str, int], ranges: dict[str, tuple[int, int]]
) -> dict[int, tuple[tuple[int, int] | None, tuple[int, int] | None]]:
    """Interval bounds of every loop's ``lo`` and ``hi`` (``None`` when unknown)."""
    out: dict[int, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {}
    for s in body:
        if isinstance(s, For):
            lo, hi = int_range(s.lo, sizes, ranges), int_range(s.hi, sizes, ranges)
            out[id(s)] = (lo, hi)
            inner = dict(ranges)
            if lo is not None and hi is not None:
                inner[s.var] = (lo[0], max(lo[0], hi[1] - 1))
            out.update(_loop_ranges(s.body, sizes, inner))
        elif isinstance(s, If):
            out.update(_loop_ranges(s.body, sizes, ranges))
    return out


def _privatize_once(
    kernel: Kernel, sizes: Mapping[str, int], sequential: set[int]
) -> tuple[Kernel, str] | None:
    """Privatise one hazard of ``kernel``; record unfixable loops in ``sequential``."""
    ranges = _loop_ranges(kernel.body, sizes, {})
    for s, _ in walk_stmts(kernel.body):
        if not isinstance(s, For) or s.seq or id(s) in sequential:
            continue
        for tensor in _hazards(s):
            lo, hi = ranges.get(id(s), (None, None))
            if lo is None or hi is None or not _privatizable(kernel, s, tensor):
                logger.info("loop `%s` runs sequentially (hazard on `%s`)", s.var, tensor)
                sequential.add(id(s))
                break
            base, extent = lo[0], max(1, hi[1] - lo[0])
            index: Expr = Name(s.var) if base == 0 else Binary("-", Name(s.var), _int(base))
            prefix = functools.partial(_prefix, tensor=tensor, index=index)
            new_loop = dataclasses.replace(s, body=tuple(map_exprs(b, prefix) for b in s.body))
            locals_ = tuple(
                dataclasses.replace(d, shape=(IntLit(extent), *d.shape)) if d.name == tensor else d
                for d in kernel.locals
            )
            body = _replace(kernel.body, s, new_loop)
            return dataclasses.replace(kernel, locals=locals_, body=body), tensor
    return None


def _int(value: int) -> Expr:
    return IntLit(value) if value >= 0 else Unary("-", IntLit(-value))


def _axes(body: tuple[Stmt, ...], depth: int, axis: dict[int, int]) -> int:
    deepest = depth
    for s in body:
        if isinstance(s, For):
            axis[id(s)] = depth
            deepest = max(deepest, _axes(s.body, depth + 1, axis))
        elif isinstance(s, If):
            deepest = max(deepest, _axes(s.body, depth, axis))
    return deepest


def _sequential_ids(kernel: Kernel) -> frozenset[int]:
    seq: set[int] = set()
    for s, _ in walk_stmts(kernel.body):
        if isinstance(s, For) and not s.seq and _hazards(s):
            seq.add(id(s))
    return frozenset(seq)


def prepare_program(program: Program, sizes: Mapping[str, int]) -> PreparedProgram:
    """Plan the execution of ``program`` at ``sizes`` (see module docstring)."""
    kernels: list[Kernel] = []
    plans: list[KernelPlan] = []
    privatized: list[str] = []
    for kernel in program.kernels:
        current = kernel
        sequential: set[int] = set()
        for _ in range(_MAX_ROUNDS):
            step = _privatize_once(current, sizes, sequential)
            if step is None:
                break
            current, name = step
            privatized.append(f"{kernel.name}.{name}")
            sequential = set()
        axis: dict[int, int] = {}
        ndim = _axes(current.body, 0, axis)
        plans.append(KernelPlan(ndim, axis, _sequential_ids(current)))
        kernels.append(current)
    prepared = dataclasses.replace(program, kernels=tuple(kernels))
    return PreparedProgram(prepared, tuple(plans), tuple(privatized))
