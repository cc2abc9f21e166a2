"""Entry point of the jaxpr lowering: declare the program interface, walk, write outputs.

Contract: ``JaxCapture -> LoweredProgram``. Inputs (``x0``...) and parameters
(``p_...``) are declared first, then the outputs (``y0``...); each output is the
destination of the equation that produces it, so no copy is needed unless the output
is an input, a view, a literal, a repeated variable or an uncovered op's result. Then
one ``output_copy`` kernel writes it: an alias kernel (run by validation, free in the
bounds) when the output is an alias of a tensor the program holds, a plain kernel for
a literal. Note [JAX output layouts]: a kernel that only moves data into outputs
(a ``rev`` of a held tensor; one strided read per
output) becomes an alias kernel too, since a JAX array has no user-visible layout. The
equations are lowered by `Lowerer` (`solar.frontends.jaxfe.driver`), whose table loads
every ``ops_*`` module on first use.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from solar.frontends.jaxfe.capture import JaxCapture
from solar.frontends.jaxfe.core import EqnOperand, Opaque, Value, ir_dtype
from solar.frontends.jaxfe.driver import Lowerer
from solar.frontends.jaxfe.phases import step_phases
from solar.frontends.jaxfe.walk import is_var
from solar.frontends.kit import LoweredProgram, TensorInfo, UnsupportedOpError
from solar.frontends.kit.outputs import write_empty_outputs
from solar.ir import (
    Access,
    Assign,
    For,
    If,
    Kernel,
    Program,
    Reduce,
    Role,
    TensorDecl,
    accesses,
    linear_form,
    resolve_sizes,
    walk_exprs,
    walk_stmts,
)

__all__ = ["alias_output_moves", "lower_jaxpr"]


def lower_jaxpr(capture: JaxCapture, *, count_uncovered: bool = False) -> LoweredProgram:
    """Lower a captured program to Affine Loop IR, one kernel per jaxpr equation.

    Args:
        capture: from `trace_jax_file`.
        count_uncovered: give each uncovered equation XLA's FLOPs for it alone
            (``counted_flops`` of its coverage row; one XLA lowering per equation).

    Returns:
        The program with its interface names, coverage and notes. Uncovered equations
        never raise: they are reported in ``coverage`` and their outputs become inputs.
    """
    lw = Lowerer(capture.name, strip_root=capture.kind != "function")
    lw.count_uncovered = count_uncovered
    jaxpr = capture.closed_jaxpr.jaxpr
    lw.step_phases = step_phases(jaxpr)
    args: list[Value] = [Opaque((), "") for _ in jaxpr.invars]
    order = [*range(capture.n_params, len(jaxpr.invars)), *range(capture.n_params)]
    for k in order:
        var, name = jaxpr.invars[k], capture.arg_names[k]
        shape = tuple(int(d) for d in var.aval.shape)
        if name is None:
            args[k] = Opaque(shape, str(var.aval.dtype))
            lw.notes.append(f"jaxpr input {k} has dtype {var.aval.dtype}: not representable")
            continue
        role: Role = "param" if k < capture.n_params else "input"
        args[k] = _declare(lw, role, var, name)
    outputs: list[TensorInfo | None] = []
    dest: dict[Any, TensorInfo] = {}
    for k, var in enumerate(jaxpr.outvars):
        name = capture.output_names[k]
        try:
            out = _declare(lw, "output", var, name)
        except UnsupportedOpError:
            lw.notes.append(f"output {name} has dtype {var.aval.dtype}: dropped")
            outputs.append(None)
            continue
        outputs.append(out)
        if is_var(var) and var not in jaxpr.invars and var not in dest:
            dest[var] = out
    consts = [lw.const_operand(c) for c in capture.closed_jaxpr.consts]
    results = lw.lower_jaxpr(jaxpr, consts, args, dest=dest)
    written: set[str] = set()
    copies: list[tuple[TensorInfo, EqnOperand]] = []
    for maybe_out, value in zip(outputs, results, strict=True):
        if maybe_out is None:
            continue
        out = maybe_out
        done = (
            isinstance(value, TensorInfo)
            and value.is_storage
            and value.ref.name == out.ref.name
            and out.ref.name not in written
        )
        written.add(out.ref.name)
        if done:
            continue
        if isinstance(value, Opaque):
            lw.notes.append(f"output {out.ref.name} comes from an unrepresentable value")
            continue
        copies.append((out, value))
    # literals first: alias kernels come after every other kernel (E0224)
    copies.sort(key=lambda c: _is_alias(lw, *c))
    for out, value in copies:
        kb = lw.pb.kernel("output_copy", alias=_is_alias(lw, out, value))
        lw.copy_into(kb, out, value)
        lw.finish_kernel(kb)
    return lw.lowered(
        alias_output_moves(write_empty_outputs(lw.pb.build())),
        inputs=capture.arg_names[capture.n_params :],
        params=tuple((name, name) for name in capture.param_names),
        outputs=tuple(o.ref.name if o is not None else None for o in outputs),
        constant_values=lw.constants,
        cond_regions=lw.cond_regions,
    )


def _is_alias(lw: Lowerer, out: TensorInfo, value: EqnOperand) -> bool:
    """True if ``out`` may be written by an alias kernel: ``value`` is (a view of) another
    program-level tensor of its dtype, not a literal."""
    return (
        isinstance(value, TensorInfo)
        and value.ref.name != out.ref.name
        and value.dtype == out.dtype
        and lw.pb.declaration(value.ref.name) is not None
    )


def _declare(lw: Lowerer, role: Role, var: Any, name: str) -> TensorInfo:
    shape = tuple(int(d) for d in var.aval.shape)
    return lw.declare(role, ir_dtype(var.aval.dtype), shape, name, exact=True)


def alias_output_moves(program: Program) -> Program:
    """Turn kernels that only move held data into outputs into alias kernels, moved last.

    Note [JAX output layouts]: a JAX array has no user-visible layout, so an output
    that is a reversal of a tensor the program holds may be returned as a strided view
    of it (transposes, slices and split pieces are views already, Note [Free views]).
    A kernel qualifies when every
    statement is ``Out[i...] = Src[s...]`` with ``s`` affine in the loop variables (a
    strided read), one statement per output, ``Src`` a program-level tensor of
    ``Out``'s dtype that no later kernel writes, and no kernel reads ``Out`` (so moving
    the kernel after every other one changes no value).

    >>> from solar.ir import parse_program, print_program
    >>> p = alias_output_moves(parse_program('''solar-ir 1
    ... program t
    ... input x0 : f32[2, 3]
    ... output y0 : f32[3, 2]
    ... kernel transpose { for i in 0 .. 3 { for j in 0 .. 2 { y0[i, j] = x0[j, i] } } }'''))
    >>> p.kernels[0].alias
    True
    """
    decls = {t.name: t for t in program.tensors}
    readers: dict[str, set[int]] = {}
    writers: dict[str, list[int]] = {}
    for k, kernel in enumerate(program.kernels):
        if kernel.collective is not None:
            writers.setdefault(kernel.collective.target, []).append(k)
            readers.setdefault(kernel.collective.source, set()).add(k)
        for stmt, _ctx in walk_stmts(kernel.body):
            reads: tuple[Access, ...] = ()
            if isinstance(stmt, Assign | Reduce):
                reads, write = accesses(stmt)
                writers.setdefault(write.tensor, []).append(k)
            elif isinstance(stmt, If):  # loop bounds read no tensors (E0207)
                reads = tuple(a for a in walk_exprs(stmt.cond) if isinstance(a, Access))
            for a in reads:
                readers.setdefault(a.tensor, set()).add(k)
    sizes = resolve_sizes(program)
    moved = [
        k
        for k, kernel in enumerate(program.kernels)
        if not kernel.alias and _moves_only(kernel, k, (decls, sizes), readers, writers)
    ]
    if not moved:
        return program
    kernels = [kn for k, kn in enumerate(program.kernels) if k not in moved]
    kernels += [dataclasses.replace(program.kernels[k], alias=True) for k in moved]
    return dataclasses.replace(program, kernels=tuple(kernels))


def _moves_only(
    kernel: Kernel,
    k: int,
    scope: tuple[dict[str, TensorDecl], dict[str, int]],
    readers: dict[str, set[int]],
    writers: dict[str, list[int]],
) -> bool:
    """True if ``kernel`` (at position ``k``) qualifies for `alias_output_moves`."""
    if kernel.locals:
        return False
    decls, sizes = scope
    targets: set[str] = set()
    for stmt, ctx in walk_stmts(kernel.body):
        if isinstance(stmt, If) or any(isinstance(c, If) for c in ctx):
            return False
        if isinstance(stmt, For):
            continue
        if not isinstance(stmt, Assign) or not isinstance(stmt.value, Access):
            return False
        out, src = decls.get(stmt.target.tensor), decls.get(stmt.value.tensor)
        if out is None or src is None or out.role != "output" or src.dtype != out.dtype:
            return False
        loop_vars = {c.var for c in ctx if isinstance(c, For)}
        if any(linear_form(i, sizes, loop_vars=loop_vars) is None for i in stmt.value.indices):
            return False  # not a strided read (a reshape's // and %, a gather)
        if out.name in targets or readers.get(out.name) or writers[out.name] != [k]:
            return False
        if any(w > k for w in writers.get(src.name, [])):
            return False
        targets.add(out.name)
    return bool(targets)
