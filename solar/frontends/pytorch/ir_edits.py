"""Whole-program edits the torch driver needs: renaming, pruning, splicing.

Contract: pure functions ``Program -> Program`` (and one that appends kernels to a
`ProgramBuilder`); none mutates its input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from solar.frontends.kit import ProgramBuilder, TensorInfo, nest
from solar.frontends.pytorch.registry import LowerCtx
from solar.ir import (
    Access,
    Assign,
    Expr,
    For,
    If,
    IntLit,
    Name,
    Program,
    Reduce,
    Role,
    Stmt,
    TensorDecl,
)
from solar.ir.traversal import (
    accesses,
    eval_int,
    map_expr,
    resolve_sizes,
    walk_exprs,
    walk_stmts,
)

__all__ = [
    "aliases_last",
    "emit_copy",
    "map_expr",
    "prune_unused",
    "rename_tensors",
    "splice_program",
]


def map_stmt(
    stmt: Stmt, fn: Callable[[Expr], Expr | None], var: Callable[[str], str] = lambda v: v
) -> Stmt:
    """Apply `map_expr` to every expression of ``stmt``; ``var`` renames loop variables."""
    match stmt:
        case Assign(target=t, value=v):
            tgt = map_expr(t, fn)
            assert isinstance(tgt, Access)
            return Assign(tgt, map_expr(v, fn))
        case Reduce(target=t, op=op, value=v):
            tgt = map_expr(t, fn)
            assert isinstance(tgt, Access)
            return Reduce(tgt, op, map_expr(v, fn))
        case For():
            return For(
                var(stmt.var),
                map_expr(stmt.lo, fn),
                map_expr(stmt.hi, fn),
                tuple(map_stmt(s, fn, var) for s in stmt.body),
                stmt.step,
                stmt.seq,
            )
        case If(cond=c, body=body):
            return If(map_expr(c, fn), tuple(map_stmt(s, fn, var) for s in body))
    raise TypeError(type(stmt))


def rename_tensors(program: Program, mapping: Mapping[str, str], *, role: Role) -> Program:
    """Rename program-level tensors (declarations and accesses); renamed ones get ``role``."""
    if not mapping:
        return program

    def fix(e: Expr) -> Expr | None:
        if isinstance(e, Access) and e.tensor in mapping:
            return Access(mapping[e.tensor], e.indices)
        return None

    tensors = tuple(
        TensorDecl(mapping[t.name], role, t.dtype, t.shape) if t.name in mapping else t
        for t in program.tensors
    )
    kernels = tuple(
        dataclasses.replace(
            k,
            body=tuple(map_stmt(s, fix) for s in k.body),
            collective=k.collective
            and dataclasses.replace(
                k.collective,
                source=mapping.get(k.collective.source, k.collective.source),
                target=mapping.get(k.collective.target, k.collective.target),
            ),
        )
        for k in program.kernels
    )
    return dataclasses.replace(program, tensors=tensors, kernels=kernels)


def _tensors_in(exprs: Sequence[Expr]) -> set[str]:
    return {sub.tensor for e in exprs for sub in walk_exprs(e) if isinstance(sub, Access)}


def prune_unused(program: Program) -> Program:
    """Drop temps/params no kernel touches (superseded versions, view-only declarations)."""
    used: set[str] = set()
    for k in program.kernels:
        if k.collective is not None:
            used |= {k.collective.source, k.collective.target}
        for stmt, _ctx in walk_stmts(k.body):
            match stmt:
                case Assign() | Reduce():
                    reads, write = accesses(stmt)
                    used.update(a.tensor for a in (*reads, write))
                case For():
                    used.update(_tensors_in((stmt.lo, stmt.hi)))
                case If():
                    used.update(_tensors_in((stmt.cond,)))
    tensors = tuple(t for t in program.tensors if t.role in ("input", "output") or t.name in used)
    return dataclasses.replace(program, tensors=tensors)


def splice_program(
    pb: ProgramBuilder,
    kernel_program: Program,
    args: Sequence[TensorInfo],
    outs: Sequence[TensorInfo],
    *,
    prefix: str = "",
) -> None:
    """Append ``kernel_program``'s kernels to ``pb``, binding ``a<k>``/``out<k>`` to tensors.

    Sizes are replaced by their default values, temps become program temps, locals and
    loop variables get fresh names, and accesses of ``a<k>``/``out<k>`` go through the
    view maps of ``args``/``outs``.

    Raises:
        ValueError: the program names an ``a<k>``/``out<k>`` that does not exist.
    """
    sizes = resolve_sizes(kernel_program)
    binding = _bind_tensors(pb, kernel_program, args, outs, sizes, prefix)
    for kernel in kernel_program.kernels:
        kb = pb.kernel(f"{prefix}_{kernel.name}" if prefix else kernel.name)
        local_names: dict[str, str] = {}
        for loc in kernel.locals:
            local_shape = [eval_int(d, sizes) for d in loc.shape]
            local_names[loc.name] = kb.local(loc.dtype, local_shape, loc.name).name
        var_names: dict[str, str] = {}
        for stmt, _ctx in walk_stmts(kernel.body):
            if isinstance(stmt, For) and stmt.var not in var_names:
                var_names[stmt.var] = pb.unique(stmt.var)
        fix = _Rebind(binding, local_names, var_names, sizes)
        kb.emit(*(map_stmt(s, fix, _renamer(var_names)) for s in kernel.body))
        pb.finish_kernel(kb)


def _bind_tensors(
    pb: ProgramBuilder,
    kernel_program: Program,
    args: Sequence[TensorInfo],
    outs: Sequence[TensorInfo],
    sizes: Mapping[str, int],
    prefix: str,
) -> dict[str, TensorInfo]:
    """``a<k>``/``out<k>`` to ``args``/``outs``; every other tensor a new program temp."""
    binding: dict[str, TensorInfo] = {}
    for decl in kernel_program.tensors:
        name = decl.name
        if name.startswith("a") and name[1:].isdigit():
            binding[name] = args[int(name[1:])]
        elif name.startswith("out") and name[3:].isdigit():
            binding[name] = outs[int(name[3:])]
        else:
            shape = tuple(eval_int(d, sizes) for d in decl.shape)
            ref = pb.tensor("temp", decl.dtype, shape, f"{prefix}_{name}" if prefix else name)
            binding[name] = TensorInfo(ref, shape, decl.dtype)
    return binding


@dataclasses.dataclass(frozen=True, slots=True)
class _Rebind:
    """The expression rewrite of a spliced kernel: loop variables renamed, sizes as
    their values, bound tensors through their view maps, locals renamed."""

    binding: Mapping[str, TensorInfo]
    local_names: Mapping[str, str]
    var_names: Mapping[str, str]
    sizes: Mapping[str, int]

    def __call__(self, e: Expr) -> Expr | None:
        if isinstance(e, Name):
            if e.name in self.var_names:
                return Name(self.var_names[e.name])
            if e.name in self.sizes:
                return IntLit(self.sizes[e.name])
        if isinstance(e, Access):
            if e.tensor in self.binding:
                bound = self.binding[e.tensor]
                return Access(bound.ref.name, bound.storage_index(e.indices))
            if e.tensor in self.local_names:
                return Access(self.local_names[e.tensor], e.indices)
        return None


def _renamer(names: Mapping[str, str]) -> Callable[[str], str]:
    return lambda v: names.get(v, v)


def aliases_last(program: Program) -> Program:
    """``program`` with its alias kernels moved after every other kernel (E0224).

    Only output copies follow the first alias kernel when the driver calls this, and no
    alias kernel reads what they write, so the order changes no value.
    """
    kernels = sorted(program.kernels, key=lambda k: k.alias)
    if all(a is b for a, b in zip(kernels, program.kernels, strict=True)):
        return program
    return dataclasses.replace(program, kernels=tuple(kernels))


def emit_copy(
    pb: ProgramBuilder, name: str, src: TensorInfo, dst: TensorInfo, *, alias: bool = False,
    inplace: bool = False,
) -> None:
    """A kernel ``dst[idx] = src[idx]`` over ``dst``'s shape.

    With ``alias`` it is an alias kernel, unless the copy could not be one (a dtype
    change, or subscripts that read tensors): then it stays a charged copy. With
    ``inplace`` (a whole copy of an input into its next version) it is an in-place kernel.
    """
    kb = pb.kernel(name)
    idx = kb.fresh_vars(dst.rank)
    read = LowerCtx.read(src, idx)
    body = Assign(LowerCtx.write(dst, idx), read)
    kb.alias = (
        alias
        and src.ref.dtype == dst.ref.dtype
        and not any(isinstance(e, Access) for i in read.indices for e in walk_exprs(i))
    )
    kb.inplace = inplace
    kb.emit(*nest(list(zip(idx, dst.shape, strict=True)), [body]))
    pb.finish_kernel(kb)
