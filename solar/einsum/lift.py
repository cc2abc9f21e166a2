"""Lift a verified program to an einsum graph with exact (or lower-bound) counts.

Contract: ``Program -> EinsumGraph``, deterministic. The input is assumed to pass
`solar.ir.verify_program`. Each leaf statement becomes an `EinsumNode` (a
value-dependent ``if`` adds a ``guard`` node for its condition; `solar.einsum.leaves`);
each kernel gets a `KernelCost` (FLOPs by work class, distinct elements per
program-level tensor; `solar.einsum.traffic`); the graph records dataflow edges,
contraction nodes for the cache-aware model, and provable global-reduction re-reads
(`solar.einsum.reuse`). One `CountContext` serves the whole lift, so deferred-count
names are unique in the graph. Counting rules: docs/bounds.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from solar.einsum.branches import charge_cheapest_branches
from solar.einsum.count import Count
from solar.einsum.counter import CountContext
from solar.einsum.graph import Edge, EinsumGraph, KernelCost, ProgramTensor
from solar.einsum.image import AccessImage, union_by_key, union_images
from solar.einsum.leaves import Leaf, Scope, lift_kernel
from solar.einsum.reuse import contractions, spills
from solar.einsum.traffic import kernel_cost
from solar.ir import DType, IntLit, Kernel, Program, alias_targets, inplace_source
from solar.symbolic import SymExpr, product, to_sympy

__all__ = ["lift_to_einsum"]

_ZERO = Count.of(0)


def lift_to_einsum(program: Program) -> EinsumGraph:
    """Lift ``program`` to an `EinsumGraph`.

    Args:
        program: a verified program.

    Returns:
        The einsum graph; all counts are symbolic in the program's sizes.

    >>> from solar.ir import parse_program
    >>> g = lift_to_einsum(parse_program('''solar-ir 1
    ... program mm
    ... size M = 4
    ... size N = 5
    ... size K = 6
    ... input A : f32[M, K]
    ... param B : f32[K, N]
    ... output C : f32[M, N]
    ... kernel mm { for m in 0 .. M { for n in 0 .. N { C[m, n] = 0.0
    ...   for k in 0 .. K { C[m, n] += A[m, k] * B[k, n] } } } }'''))
    >>> g.nodes[1].equation, g.kernels[0].flops.formula, g.kernels[0].unit
    ('mk,kn->mn', '2*K*M*N', 'contraction')
    """
    ctx = CountContext(_definitions(program))
    scope = Scope.of(program)
    leaves: list[Leaf] = []
    kernels: list[KernelCost] = []
    alias_leaves: list[Leaf] = []
    storage: dict[str, str] = {}
    writes: dict[tuple[int, str], Count] = {}  # write points per (kernel, in-place destination)
    for ki, kernel in enumerate(program.kernels):
        if kernel.inplace:
            storage.update(inplace_source(kernel, program))
            kernels.append(_alias_cost(scope, kernel, ki))
            continue
        kl = lift_kernel(scope, kernel, ctx)
        if kernel.alias:
            alias_leaves.extend(kl)
            kernels.append(_alias_cost(scope, kernel, ki))
            continue
        leaves.extend(kl)
        for lf in kl:
            if lf.stmt is not None and lf.stmt.target.tensor in storage:
                key = (ki, lf.stmt.target.tensor)
                writes[key] = writes.get(key, _ZERO) + ctx.points(lf.node.domain)
        kernels.append(kernel_cost(scope, kernel, ki, kl))
    kernels = charge_cheapest_branches(scope, program, ctx, kernels)
    nodes = tuple(lf.node for lf in leaves)
    return EinsumGraph(
        program=program,
        nodes=nodes,
        kernels=tuple(kernels),
        tensors=_tensor_infos(scope, kernels, alias_leaves, storage, writes),
        edges=_edges(kernels),
        contractions=tuple(contractions(scope, leaves, ctx)),
        spills=tuple(spills(scope, leaves)),
    )


def _definitions(program: Program) -> dict[str, SymExpr]:
    """Derived sizes as expressions of free sizes (for proofs)."""
    defs: dict[str, SymExpr] = {}
    for decl in program.sizes:
        if isinstance(decl.value, IntLit):
            continue
        try:
            defs[decl.name] = to_sympy(decl.value, sizes=defs)
        except ValueError:
            continue
    return defs


def _alias_cost(scope: Scope, kernel: Kernel, ki: int) -> KernelCost:
    """Note [Alias kernels], Note [In-place updates]: no launch, so no FLOPs and no
    traffic."""
    written = [scope.decls[n].dtype for n in alias_targets(kernel) if n in scope.decls]
    return KernelCost(
        kernel.name, ki, (), (), "vector", written[0] if written else DType.F32, alias=True
    )


def _storage_reads(kernels: Sequence[KernelCost], dst: str,
                   write_points: Mapping[tuple[int, str], Count]) -> Count:
    """Note [In-place updates]: the elements of an in-place destination that a kernel reads
    before any update wrote them are reads of the source's storage. Kernel k reads at
    least ``read_k - (elements written by earlier kernels)`` of them (its reads of what it
    wrote itself are already left out of ``read_k``), and the union over kernels is at
    least the largest. Earlier writes are bounded above by their statements' executed
    points (a gathered ``index_copy_`` row is one row per index, whatever it hits), exact
    closed forms only: after a count that is not, no later kernel adds anything."""
    best: list[Count] = []
    written = Count.of(0)
    for k in kernels:
        t = next((t for t in k.traffic if t.tensor == dst), None)
        if t is None:
            continue
        if not t.read_elems.is_zero:
            diff = t.read_elems - written
            best.append(Count(diff.expr, diff.deferred, exact=False).clamp0())
        points = write_points.get((k.index, dst), _ZERO)
        if not points.exact or points.deferred:
            break
        written = written + points
    return Count.max_of(best, exact=False) if best else _ZERO


def _tensor_infos(
    scope: Scope, kernels: Sequence[KernelCost], alias_leaves: Sequence[Leaf],
    storage: Mapping[str, str], write_points: Mapping[tuple[int, str], Count],
) -> tuple[ProgramTensor, ...]:
    """Per tensor, its compulsory traffic (Note [Alias kernels] for temps that outputs view;
    Note [In-place updates] for the storage an in-place kernel hands on)."""
    viewed: dict[str, list[AccessImage]] = {}
    for lf in alias_leaves:
        for name, imgs in lf.reads.items():
            viewed.setdefault(name, []).extend(imgs)
    # One pass over the traffic, grouped by tensor (a scan per tensor is quadratic).
    by_tensor: dict[str, tuple[list[tuple[Count, str]], list[tuple[Count, str]]]] = {}
    for k in kernels:
        for t in k.traffic:
            reads, writes = by_tensor.setdefault(t.tensor, ([], []))
            reads.append((t.raw_read_elems, t.read_key or f"k{k.index}"))
            writes.append((t.written_elems, t.write_key or f"k{k.index}"))
    out = []
    for decl in scope.program.tensors:
        elements = Count.of(product(to_sympy(d) for d in decl.shape))
        reads, writes = by_tensor.get(decl.name, ([], []))
        comp_r = union_by_key(reads) if decl.role in ("input", "param") else _ZERO
        comp_w = union_by_key(writes) if decl.role == "output" else _ZERO
        if decl.role == "temp" and decl.name in viewed:
            # The elements an output views must be in memory when the program ends.
            comp_w = union_images(viewed[decl.name])[0]
            if decl.name in storage:
                # an in-place destination returned whole (a donated JAX buffer): its
                # elements no update wrote are the source's, in memory already
                whole = comp_w.exact and not comp_w.deferred and comp_w.expr == elements.expr
                comp_w = union_by_key(writes) if whole else _ZERO
        for dst in (d for d, s in storage.items() if s == decl.name):
            extra = _storage_reads(kernels, dst, write_points)
            if not extra.is_zero:
                comp_r = extra if comp_r.is_zero else comp_r.maximum(extra, exact=False)
        out.append(ProgramTensor(decl.name, decl.role, decl.dtype, elements, comp_r, comp_w))
    return tuple(out)


def _edges(kernels: Sequence[KernelCost]) -> tuple[Edge, ...]:
    out: list[Edge] = []
    last_writer: dict[str, str] = {}
    for k in kernels:
        for t in k.traffic:
            if not t.raw_read_elems.is_zero and t.tensor in last_writer:
                out.append(Edge(t.tensor, last_writer[t.tensor], k.name))
        for t in k.traffic:
            if not t.written_elems.is_zero:
                last_writer[t.tensor] = k.name
    return tuple(out)
