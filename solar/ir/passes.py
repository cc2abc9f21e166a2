"""Program-level IR transformations (pure; inputs are never mutated).

Contract: ``Program -> Program`` with the same outputs for the same inputs.
`eliminate_dead_code` removes work whose results no output depends on (eager
PyTorch computes max-pool indices, saved batch-norm statistics or an LSTM's
workspace whether or not anything reads them); the bounds are computed on the
result, so dead work is never charged (Note [Dead code] in docs/bounds.md).
`forward_copies` reads through kernels that only move data (Note [Copies]);
`merge_duplicate_kernels` reads the first of kernels that compute the same values (Note
[Duplicate kernels]).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import assert_never

from solar.ir.nodes import (
    Access,
    Assign,
    Binary,
    BoolLit,
    Cast,
    DType,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    TensorDecl,
)
from solar.ir.traversal import map_expr, map_exprs, walk_exprs, walk_stmts

__all__ = [
    "eliminate_dead_code",
    "fill_generated",
    "forward_copies",
    "merge_duplicate_kernels",
    "treat_as_intermediates",
]


def _reads(expr_sources: tuple[Expr, ...]) -> set[str]:
    out: set[str] = set()
    for e in expr_sources:
        for sub in walk_exprs(e):
            if isinstance(sub, Access):
                out.add(sub.tensor)
    return out


def _leaf_uses(stmt: Assign | Reduce, guards: tuple[Expr, ...]) -> set[str]:
    """Tensors a leaf statement reads, other than its own target element."""
    return _reads((stmt.value, *stmt.target.indices, *guards))


def _live_tensors(program: Program, keep: Collection[str] = ()) -> set[str]:
    """Backward fixpoint: outputs (and ``keep``) are live; a statement writing a live
    tensor makes its reads (value, indices, enclosing conditions and loop bounds) live."""
    leaves: list[tuple[str, set[str]]] = []

    def collect(body: tuple[Stmt, ...], ctx: tuple[Expr, ...]) -> None:
        for s in body:
            match s:
                case Assign() | Reduce():
                    leaves.append((s.target.tensor, _leaf_uses(s, ctx)))
                case For():
                    collect(s.body, (*ctx, s.lo, s.hi))
                case If():
                    collect(s.body, (*ctx, s.cond))
                case _:
                    assert_never(s)

    for k in program.kernels:
        if k.collective is not None:
            leaves.append((k.collective.target, {k.collective.source}))
        collect(k.body, ())
    live = {t.name for t in program.tensors if t.role == "output"} | set(keep)
    changed = True
    while changed:
        changed = False
        for target, uses in leaves:
            if target in live and not uses <= live:
                live |= uses
                changed = True
    return live


def _prune(body: tuple[Stmt, ...], live: set[str]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in body:
        match s:
            case Assign() | Reduce():
                if s.target.tensor in live:
                    out.append(s)
            case For() | If():
                inner = _prune(s.body, live)
                if inner:
                    same = len(inner) == len(s.body) and all(
                        a is b for a, b in zip(inner, s.body, strict=True)
                    )
                    out.append(s if same else dataclasses.replace(s, body=inner))
            case _:
                assert_never(s)
    return tuple(out)


def eliminate_dead_code(program: Program, *, keep: Collection[str] = ()) -> Program:
    """Remove statements, kernels and temporaries that no program output depends on.

    ``keep`` names further live tensors: values an op outside the IR reads (a frontend's
    uncovered op, whose results the program takes as inputs), so the work producing
    them is still charged. Returns the same object when nothing is dead.

    >>> from solar.ir import parse_program, print_program
    >>> p = parse_program('''solar-ir 1
    ... program p
    ... input X : f32[4]
    ... output Y : f32[4]
    ... temp I : i64[4]
    ... kernel k {
    ...   for i in 0 .. 4 {
    ...     Y[i] = X[i] * 2.0
    ...     I[i] = i
    ...   }
    ... }''')
    >>> print(print_program(eliminate_dead_code(p)).strip().splitlines()[-3])
        Y[i] = X[i] * 2.0
    >>> "I" in print_program(eliminate_dead_code(p))
    False
    """
    live = _live_tensors(program, keep)
    kernels: list[Kernel] = []
    changed = False
    for k in program.kernels:
        if k.collective is not None:
            changed |= k.collective.target not in live
            if k.collective.target in live:
                kernels.append(k)
            continue
        body = _prune(k.body, live)
        if not body:
            changed = True
            continue
        locals_ = tuple(d for d in k.locals if d.name in live)
        if body is k.body or (
            len(body) == len(k.body) and all(a is b for a, b in zip(body, k.body, strict=True))
        ):
            body = k.body
        if body is k.body and len(locals_) == len(k.locals):
            kernels.append(k)
            continue
        changed = True
        kernels.append(dataclasses.replace(k, locals=locals_, body=body))
    tensors = tuple(t for t in program.tensors if t.role != "temp" or t.name in live)
    if not changed and len(tensors) == len(program.tensors):
        return program
    return dataclasses.replace(program, tensors=tensors, kernels=tuple(kernels))


def treat_as_intermediates(program: Program, names: tuple[str, ...] | frozenset[str]) -> Program:
    """Re-role the given ``input`` tensors as ``temp`` (values some uncovered op produces).

    A frontend feeds the outputs of ops it could not lower into the IR as extra inputs
    so the rest of the program still runs; for the bounds they are intermediates, not
    program inputs, so the fused model must not charge their DRAM reads (Note
    [Uncovered values] in docs/bounds.md). Only for bounds: the program no longer runs.
    """
    wanted = frozenset(names)
    if not wanted:
        return program
    tensors = tuple(
        dataclasses.replace(t, role="temp") if t.name in wanted and t.role == "input" else t
        for t in program.tensors
    )
    return dataclasses.replace(program, tensors=tensors)


def fill_generated(program: Program, names: Collection[str]) -> Program:
    """Turn the kernels that copy the given ``input`` tensors into fills (writes only).

    A frontend lowers an op that draws random values (``randn``, ``bernoulli_``, the mask
    of a training-mode dropout) as a copy from an extra input holding the values the real
    run drew, so validation compares like with like. The generator itself reads nothing:
    for the bounds, each ``t[...] = r[...]`` that reads such an input ``r`` directly
    becomes ``t[...] = 0`` (Note [Generated values] in docs/bounds.md): its writes are
    charged, no read is. Only for bounds: the program no longer computes the values.
    """
    wanted = frozenset(names)
    if not wanted:
        return program
    dtypes = {t.name: t.dtype for t in program.tensors}

    def zero(name: str) -> Expr:
        dt = dtypes[name]
        if dt == DType.BOOL:
            return BoolLit(False)
        return FloatLit(0.0) if dt.is_float else IntLit(0)

    def fill(stmt: Stmt) -> Stmt:
        match stmt:
            case Assign(value=Access(tensor=src)) if src in wanted:
                return dataclasses.replace(stmt, value=zero(src))
            case For() | If():
                body = tuple(fill(s) for s in stmt.body)
                return dataclasses.replace(stmt, body=body)
            case _:
                return stmt

    kernels = tuple(
        dataclasses.replace(k, body=tuple(fill(s) for s in k.body)) for k in program.kernels
    )
    return dataclasses.replace(program, kernels=kernels)


# Note [Copies]
# ~~~~~~~~~~~~~
# Eager PyTorch materialises a view it cannot express with strides: ``x.transpose(1,
# 2).reshape(n, -1)`` or ``.contiguous()`` runs a copy kernel ``T[i...] = X[f(i...)]``,
# and the frontend lowers it as one. Its readers may use only part of T
# (``[:, ::2]`` keeps half): charged as written, the copy reads all of X, so the fused
# model would charge X's unused half, which an implementation reading through the view
# never touches, and the bound could exceed a real time. `forward_copies` rewrites every
# read ``T[e...]`` as ``X[f(e...)]`` and the copy, now dead, goes with
# `eliminate_dead_code`: reads of X are then exactly the elements used, and no model
# charges the copy's own traffic (a copy is data movement, not work the program asks
# for). Only exact rewrites qualify: T is a temp written by that one kernel, a perfect
# loop nest over all of T's elements (``T[i0, i1...]`` with ``i_k in 0 .. shape_k``),
# whose value is one access of a program tensor of T's dtype whose subscripts move whole
# indices (a permutation, broadcast or offset slice: `_moves_whole_indices`); no kernel
# after the copy writes X, so X holds the copied values wherever T is
# read; T is not read by an alias kernel (an output would become a view of X) and is not
# kept for an uncovered op.
#
# A widening cast that loses nothing is a copy too (`_EXACT_WIDENING`): ``T = f32(X)`` of
# a bf16 or fp16 X holds X's values exactly, so its readers read ``f32(X[...])``. Issue 28
# round 3: ``a.float() @ b.float()`` of bf16 matrices ran as an fp32 matmul at the
# fp32-accurate 3xTF32 rate (6x the bf16 one: 8192^3, 6.67 ms against 1.111 ms), but
# every product of two bf16 (or fp16) values is exact in fp32, so bf16 tensor cores
# accumulating in fp32 do the same arithmetic (the contraction's dtype is its narrower
# operand's, now bf16); the casts' traffic is data movement an implementation converting
# on chip never pays. Casts to fp64, from fp8, or between integer types keep their kernel
# (fp8 tensor cores accumulate below fp32 accuracy; an fp64 product is not an fp32 one).

_EXACT_WIDENING = frozenset({(DType.BF16, DType.F32), (DType.F16, DType.F32)})
"""``(source, target)`` dtypes whose cast `forward_copies` reads through."""


def _writers(program: Program) -> tuple[dict[str, set[int]], set[str]]:
    """The kernels writing each tensor, and the tensors alias kernels read."""
    writers: dict[str, set[int]] = {}
    alias_reads: set[str] = set()
    for index, kernel in enumerate(program.kernels):
        if kernel.collective is not None:
            writers.setdefault(kernel.collective.target, set()).add(index)
        for s, ctx in walk_stmts(kernel.body):
            if isinstance(s, Assign | Reduce):
                writers.setdefault(s.target.tensor, set()).add(index)
                if kernel.alias:
                    alias_reads |= _leaf_uses(s, _guards(ctx))
    return writers, alias_reads


def _collective_tensors(program: Program) -> set[str]:
    """The tensors collectives send or receive: copies and duplicates are not read
    through them (a collective reads its source whole, as a buffer)."""
    return {
        name
        for k in program.kernels
        if k.collective is not None
        for name in (k.collective.source, k.collective.target)
    }


def _substitute(expr: Expr, env: dict[str, Expr]) -> Expr:
    """``expr`` with each loop variable in ``env`` replaced by its expression."""
    return map_expr(expr, lambda e: env.get(e.name) if isinstance(e, Name) else None)


def _copy_of(
    kernel: Kernel, decls: dict[str, TensorDecl]
) -> tuple[str, tuple[str, ...], Expr] | None:
    """``(T, loop variables, source access)`` when ``kernel`` is a whole-tensor copy."""
    if kernel.alias or kernel.inplace or kernel.locals:
        return None
    loops: list[For] = []
    body = kernel.body
    while len(body) == 1 and isinstance(body[0], For):
        loop = body[0]
        if loop.step != 1 or loop.seq or loop.lo != IntLit(0):
            return None
        loops.append(loop)
        body = loop.body
    if len(body) != 1 or not isinstance(body[0], Assign):
        return None
    target, value = body[0].target, body[0].value
    cast = isinstance(value, Cast)
    if isinstance(value, Cast):
        value = value.operand
    if not isinstance(value, Access):
        return None
    dst, src = decls.get(target.tensor), decls.get(value.tensor)
    if dst is None or src is None or src.name == dst.name:
        return None
    variables = tuple(loop.var for loop in loops)
    if (
        dst.role != "temp"
        or (src.dtype, dst.dtype) not in ({(src.dtype, src.dtype)} if not cast
                                          else _EXACT_WIDENING)
        or target.indices != tuple(Name(v) for v in variables)
        or tuple(loop.hi for loop in loops) != dst.shape
        or not _moves_whole_indices(value.indices, variables)
    ):
        return None
    return dst.name, variables, Cast(dst.dtype, value) if cast else value


def _moves_whole_indices(indices: tuple[Expr, ...], variables: tuple[str, ...]) -> bool:
    """Each subscript is a literal, or one loop variable plus a constant, each variable at
    most once: a permutation, broadcast or offset slice (Note [Copies]).

    A reader's subscripts then land whole in the source's positions, so its access keeps
    the shape the counter already handles; composing through a reshape (``T[i, j] =
    X[i * N + j]``) would nest the reader's ``//`` and ``%`` inside new ones and leave
    only enumeration to count the footprint (seconds per kernel at realistic sizes).
    """
    seen: set[str] = set()
    for index in indices:
        match index:
            case IntLit():
                continue
            case Name(name=v) | Binary(op="+" | "-", lhs=Name(name=v), rhs=IntLit()):
                if v not in variables or v in seen:
                    return False
                seen.add(v)
            case _:
                return False
    return True


def forward_copies(program: Program, *, keep: Collection[str] = ()) -> Program:
    """Read through kernels that only copy a view (Note [Copies]); the copies become dead.

    Returns the same object when no copy qualifies. Run `eliminate_dead_code` after it.

    >>> from solar.ir import parse_program, print_program
    >>> p = parse_program('''solar-ir 1
    ... program p
    ... input X : f32[4, 6]
    ... temp T : f32[6, 4]
    ... output Y : f32[6, 2]
    ... kernel copy { for i in 0 .. 6 { for j in 0 .. 4 { T[i, j] = X[j, i] } } }
    ... kernel half { for i in 0 .. 6 { for j in 0 .. 2 { Y[i, j] = T[i, 2 * j] * 2.0 } } }
    ... ''')
    >>> print(print_program(eliminate_dead_code(forward_copies(p))).strip().splitlines()[-4])
          Y[i, j] = X[2 * j, i] * 2.0
    """
    decls = {t.name: t for t in program.tensors}
    writers, alias_reads = _writers(program)
    keep = {*keep, *_collective_tensors(program)}
    copies: dict[str, tuple[tuple[str, ...], Expr]] = {}
    copy_kernels: set[int] = set()
    for index, kernel in enumerate(program.kernels):
        found = _copy_of(kernel, decls)
        if found is None:
            continue
        name, variables, source = found
        read = source.operand if isinstance(source, Cast) else source
        assert isinstance(read, Access)
        if (
            name in keep
            or name in alias_reads
            or writers.get(name) != {index}
            or any(w > index for w in writers.get(read.tensor, ()))
        ):
            continue
        copies[name] = (variables, _through(source, copies))
        copy_kernels.add(index)
    if not copies:
        return program

    def rewrite(expr: Expr) -> Expr:
        return _through(expr, copies)

    kernels = tuple(
        k
        if index in copy_kernels
        else dataclasses.replace(k, body=tuple(map_exprs(s, rewrite) for s in k.body))
        for index, k in enumerate(program.kernels)
    )
    return dataclasses.replace(program, kernels=kernels)


def _through(expr: Expr, copies: dict[str, tuple[tuple[str, ...], Expr]]) -> Expr:
    """``expr`` with every read of a copied tensor replaced by a read of its source."""

    def read_source(e: Expr) -> Expr | None:
        if not isinstance(e, Access) or e.tensor not in copies:
            return None
        variables, source = copies[e.tensor]
        return _substitute(source, dict(zip(variables, e.indices, strict=True)))

    return map_expr(expr, read_source)


# Note [Duplicate kernels]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A program can compute the same values twice: a jaxpr holds ``square(x)`` once for a
# LayerNorm's mean of squares and again for an RMSNorm of the same input (XLA's CSE keeps
# one), and PyTorch code can write ``x.pow(2)`` twice. Charged as written, the work is
# counted twice, above what any implementation that computes it once needs: an
# over-count. `merge_duplicate_kernels` rewrites the readers of the later copy to read the
# earlier one's result, and the later kernel, now dead, goes with `eliminate_dead_code`.
# Only exact matches qualify. Kernel K2 (later) duplicates K1 when, with loop variables,
# kernel-local tensors and the program tensors each writes renamed in the order they
# appear, the two kernels are the same (same loop nests, statements, guards, local and
# target dtypes and shapes), so they read the same program tensors at the same points;
# no kernel between them writes a tensor K1 reads (so both read the same values); K1 is
# the only writer of its targets (they keep K1's values for every later reader); and
# every target of K2 is a temp written by K2 alone, not an output, not read by an alias
# kernel and not kept for an uncovered op. Neither is an alias kernel. Readers are
# rewritten in launch order, so a kernel that duplicates another only once its inputs were
# merged (``a = x * x; b = x * x; c = a + 1; d = b + 1``) is merged too. Values a
# frontend feeds as random draws are distinct inputs, so two draws never match; the
# pipeline runs this pass before `fill_generated` turns them into identical fills.


def _written(kernel: Kernel) -> tuple[str, ...]:
    """Program-level tensors ``kernel`` writes, in order of first write."""
    local = {d.name for d in kernel.locals}
    out: dict[str, None] = {}
    for stmt, _ in walk_stmts(kernel.body):
        if isinstance(stmt, Assign | Reduce) and stmt.target.tensor not in local:
            out.setdefault(stmt.target.tensor, None)
    return tuple(out)


def _canonical(kernel: Kernel, written: tuple[str, ...], decls: dict[str, TensorDecl]) -> object:
    """``kernel`` up to renaming (Note [Duplicate kernels]): a hashable key."""
    tensors = {d.name: f"%l{n}" for n, d in enumerate(kernel.locals)}
    tensors |= {name: f"%w{n}" for n, name in enumerate(written)}
    counter = [0]

    def expr(e: Expr, env: dict[str, str]) -> Expr:
        def rename(x: Expr) -> Expr | None:
            if isinstance(x, Name) and x.name in env:
                return Name(env[x.name])
            if isinstance(x, Access) and x.tensor in tensors:
                return dataclasses.replace(x, tensor=tensors[x.tensor])
            return None

        return map_expr(e, rename)

    def stmt(s: Stmt, env: dict[str, str]) -> Stmt:
        match s:
            case Assign() | Reduce():
                target = expr(s.target, env)
                assert isinstance(target, Access)
                return dataclasses.replace(s, target=target, value=expr(s.value, env))
            case For():
                lo, hi = expr(s.lo, env), expr(s.hi, env)
                inner = {**env, s.var: f"%i{counter[0]}"}
                counter[0] += 1
                body = tuple(stmt(b, inner) for b in s.body)
                return dataclasses.replace(s, var=inner[s.var], lo=lo, hi=hi, body=body)
            case If():
                cond = expr(s.cond, env)
                return dataclasses.replace(s, cond=cond, body=tuple(stmt(b, env) for b in s.body))
            case _:
                assert_never(s)

    return (
        tuple((d.dtype, d.shape) for d in kernel.locals),
        tuple((decls[name].dtype, decls[name].shape) for name in written),
        tuple(stmt(s, {}) for s in kernel.body),
    )


def _guards(ctx: tuple[For | If, ...]) -> tuple[Expr, ...]:
    """The loop bounds and conditions that enclose a statement."""
    return tuple(e for c in ctx for e in ((c.lo, c.hi) if isinstance(c, For) else (c.cond,)))


def merge_duplicate_kernels(program: Program, *, keep: Collection[str] = ()) -> Program:
    """Read the first of kernels that compute the same values (Note [Duplicate kernels]).

    Returns the same object when no kernel duplicates an earlier one. Run
    `eliminate_dead_code` after it: the duplicates are then dead.

    >>> from solar.ir import parse_program, print_program
    >>> p = parse_program('''solar-ir 1
    ... program p
    ... input X : f32[4]
    ... temp A : f32[4]
    ... temp B : f32[4]
    ... output Y : f32[4]
    ... kernel sq1 { for i in 0 .. 4 { A[i] = X[i] * X[i] } }
    ... kernel sq2 { for j in 0 .. 4 { B[j] = X[j] * X[j] } }
    ... kernel add { for i in 0 .. 4 { Y[i] = A[i] + B[i] } }
    ... ''')
    >>> q = eliminate_dead_code(merge_duplicate_kernels(p))
    >>> [k.name for k in q.kernels]
    ['sq1', 'add']
    >>> print(print_program(q).strip().splitlines()[-3])
        Y[i] = A[i] + A[i]
    """
    decls = {t.name: t for t in program.tensors}
    writers, alias_reads = _writers(program)
    keep = {*keep, *_collective_tensors(program)}

    def mergeable(first: int, later: int, targets: tuple[str, ...], reads: set[str]) -> bool:
        return all(
            decls[t].role == "temp"
            and t not in keep
            and t not in alias_reads
            and writers.get(t) == {later}
            for t in targets
        ) and not any(first < w < later for r in reads for w in writers.get(r, ()))

    renamed: dict[str, str] = {}
    seen: dict[object, list[tuple[int, tuple[str, ...]]]] = {}
    kernels = list(program.kernels)
    for index, kernel in enumerate(program.kernels):
        if renamed:
            kernel = _read_renamed(kernel, renamed)
            kernels[index] = kernel
        written = _written(kernel)
        if (kernel.alias or kernel.inplace or not written
                or any(writers.get(t) != {index} for t in written)):
            continue
        local = {d.name for d in kernel.locals}
        reads = (
            {
                r
                for s, ctx in walk_stmts(kernel.body)
                if isinstance(s, Assign | Reduce)
                for r in _leaf_uses(s, _guards(ctx))
            }
            - local
            - set(written)
        )
        key = _canonical(kernel, written, decls)
        for first, targets in reversed(seen.get(key, [])):
            if mergeable(first, index, written, reads):
                renamed |= dict(zip(written, targets, strict=True))
                break
        else:
            seen.setdefault(key, []).append((index, written))
    if not renamed:
        return program
    return dataclasses.replace(program, kernels=tuple(kernels))


def _read_renamed(kernel: Kernel, renamed: dict[str, str]) -> Kernel:
    """``kernel`` reading ``renamed[T]`` wherever it read ``T``."""

    def read(e: Expr) -> Expr | None:
        if isinstance(e, Access) and e.tensor in renamed:
            return dataclasses.replace(e, tensor=renamed[e.tensor])
        return None

    body = tuple(map_exprs(s, lambda e: map_expr(e, read)) for s in kernel.body)
    if all(a is b for a, b in zip(body, kernel.body, strict=True)):
        return kernel
    return dataclasses.replace(kernel, body=body)
