"""Run every rank of a distributed program and simulate its collectives.

Contract: ``(Program, one input set per rank) -> one output set per rank``. Each rank
runs the program with ``rank`` replaced by its index on its own tensors (the ordinary
vectorised executor, `solar.validate.executor.Machine`, kernel by kernel); the ranks
advance in lock step, and at a collective kernel the runner gathers the source
tensors of each group and writes every rank's target with whole-array numpy work
(`simulate_collective`; semantics in docs/ir.md "Distributed programs"). No Python
source is generated. Faults are `ExecutionError`s:

=====  ===========================================================================
E0350  a distributed program given to the single-device executor, or the number of
       input sets is not the world size
E0351  a collective reads a source with unwritten elements on some rank
E0352  the ranks of one group hold sources of different shapes (or the target shape
       is not the collective's result): mismatched collective shapes across ranks
=====  ===========================================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from solar.diagnostics import ExecutionError
from solar.ir import (
    RANK,
    Collective,
    Expr,
    IntLit,
    Name,
    Program,
    group_partition,
    map_expr,
    map_exprs,
    permute_pairs,
    print_collective,
    resolve_sizes,
)
from solar.validate import parallel
from solar.validate.dtypes import output_array, round_to_dtype
from solar.validate.executor import Machine, RunResult, default_budget, prepared_program
from solar.validate.faults import raise_resource
from solar.validate.memory import over_budget_message
from solar.validate.state import TensorState, allocate_tensors

__all__ = ["execute_distributed", "run_distributed", "simulate_collective", "specialize_rank"]

_REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
           "avg": np.add}


def specialize_rank(program: Program, rank: int) -> Program:
    """``program`` as rank ``rank`` runs it: every ``rank`` name replaced by the index.

    The same object comes back when no statement names ``rank``.
    """

    def sub(expr: Expr) -> Expr:
        return map_expr(expr, lambda e: IntLit(rank) if e == Name(RANK) else None)

    kernels = []
    for kernel in program.kernels:
        body = tuple(map_exprs(s, sub) for s in kernel.body)
        changed = any(a is not b for a, b in zip(body, kernel.body, strict=True))
        kernels.append(dataclasses.replace(kernel, body=body) if changed else kernel)
    if all(a is b for a, b in zip(kernels, program.kernels, strict=True)):
        return program
    return dataclasses.replace(program, kernels=tuple(kernels))


def simulate_collective(
    coll: Collective,
    sources: Sequence[np.ndarray],
    groups: Sequence[Sequence[int]],
    *,
    pairs: Sequence[tuple[int, int]] = (),
    target_ndim: int | None = None,
) -> list[np.ndarray]:
    """Every rank's target of ``coll``, from every rank's source (index = rank).

    ``target_ndim`` picks the stacked forms: an ``all_gather`` whose target has one
    dimension more than its source stacks a new axis ``dim``; a ``reduce_scatter``
    whose target has one fewer drops it (docs/ir.md).

    Raises:
        ExecutionError: the sources of one group differ in shape (E0352).

    >>> c = Collective("all_gather", "Y", "X", dim=0)
    >>> [y.tolist() for y in simulate_collective(c, [np.array([r]) for r in range(2)],
    ...                                          [(0, 1)])]
    [[0, 1], [0, 1]]
    """
    out: list[np.ndarray | None] = [None] * len(sources)
    if coll.kind == "permute":
        for rank, src in enumerate(sources):
            out[rank] = np.zeros_like(src)
        for sender, receiver in pairs:
            out[receiver] = sources[sender].copy()
        return [o for o in out if o is not None]
    for group in groups:
        shapes = {sources[r].shape for r in group}
        if len(shapes) > 1:
            detail = ", ".join(f"rank {r}: {list(sources[r].shape)}" for r in group)
            raise ExecutionError(
                f"`{print_collective(coll)}`: the ranks of group {list(group)} hold sources "
                f"of different shapes ({detail})",
                code="E0352",
                span=coll.span,
            )
        stacked = np.stack([sources[r] for r in group])
        delta = 0 if target_ndim is None else target_ndim - stacked.ndim + 1
        for position, part in enumerate(_group_result(coll, stacked, delta)):
            out[group[position]] = part
    return [o for o in out if o is not None]


def _group_result(coll: Collective, stacked: np.ndarray, delta: int) -> list[np.ndarray]:
    """The targets of one group's ranks, in group order, from their stacked sources;
    ``delta``: the target's rank minus the source's."""
    n = stacked.shape[0]
    match coll.kind:
        case "all_reduce":
            assert coll.op is not None
            total = _REDUCE[coll.op].reduce(stacked, axis=0)
            if coll.op == "avg":
                total = total / n
            return [total] * n
        case "broadcast":
            return [stacked[coll.root or 0]] * n
        case "all_gather":
            d = coll.dim or 0
            if delta == 1:
                return [np.stack(list(stacked), axis=d)] * n
            return [np.concatenate(list(stacked), axis=d)] * n
        case "reduce_scatter":
            assert coll.op is not None
            d = coll.dim or 0
            total = _REDUCE[coll.op].reduce(stacked, axis=0)
            if coll.op == "avg":
                total = total / n
            if delta == -1:
                return [np.take(total, g, axis=d) for g in range(n)]
            return np.split(total, n, axis=d)
        case "all_to_all":
            s, c = coll.split or 0, coll.concat or 0
            parts = [np.split(src, n, axis=s) for src in stacked]
            return [np.concatenate([parts[g][j] for g in range(n)], axis=c) for j in range(n)]
        case _:
            raise AssertionError(coll.kind)


def run_distributed(
    program: Program,
    inputs: Sequence[Mapping[str, object]],
    *,
    sizes: Mapping[str, int] | None = None,
    memory_budget_bytes: int | None = None,
    deadline: float | None = None,
) -> tuple[RunResult, ...]:
    """Run every rank of a verified distributed program; one `RunResult` per rank.

    Args:
        program: a verified program with ``world``.
        inputs: per rank (``inputs[r]``), one array per input and param.
        sizes: overrides of free sizes, the world size included.
        memory_budget_bytes: the most memory all ranks together may need (E0305).
        deadline: ``time.monotonic()`` value after which to stop (E0308).

    Raises:
        ExecutionError: a fault of a rank (E030x, with the statement) or of a
            collective (E0350-E0352).
        ResourceError: the memory or time budget is exceeded (E0305, E0308).
    """
    if program.world is None:
        raise ExecutionError(f"`{program.name}` has no `world`: run it with execute_program",
                             code="E0350", span=program.span)
    bound = resolve_sizes(program, sizes)
    world = bound[program.world]
    if len(inputs) != world:
        raise ExecutionError(f"{len(inputs)} input sets for a world of {world} ranks",
                             code="E0350", span=program.span)
    machines = _machines(program, bound, inputs, memory_budget_bytes, deadline)
    with parallel.one_blas_thread(), np.errstate(all="ignore"):
        for m in machines:
            m.start()
        try:
            for index, kernel in enumerate(program.kernels):
                for m in machines:
                    m.enter(index)
                if kernel.collective is not None:
                    _collective_step(program, kernel.collective, machines, bound)
                else:
                    for m in machines:
                        m.run_kernel(m.prepared.program.kernels[index], m.prepared.plans[index])
                for m in machines:
                    m.leave(index)
        finally:
            for m in machines:
                m.cache.padded.clear()
    results = []
    for m in machines:
        outputs: dict[str, np.ndarray] = {}
        written: dict[str, np.ndarray | None] = {}
        for decl in program.tensors_with_role("output"):
            st = m.tensors[decl.name]
            outputs[decl.name] = output_array(st.data, decl.dtype, copy=False)
            written[decl.name] = None if st.written is None else st.written.copy()
        results.append(RunResult(outputs, written, bound))
    return tuple(results)


def _machines(
    program: Program,
    bound: Mapping[str, int],
    inputs: Sequence[Mapping[str, object]],
    budget: int | None,
    deadline: float | None,
) -> list[Machine]:
    shared = None if specialize_rank(program, 0) is not program else prepared_program(
        program, bound
    )
    machines = []
    needed = 0
    for rank, rank_inputs in enumerate(inputs):
        if shared is None:
            prepared, need, cache = prepared_program(specialize_rank(program, rank), bound)
        else:
            prepared, need, _ = shared
            cache = type(shared[2])()
        needed += need
        tensors = allocate_tensors(program, bound, rank_inputs)
        machines.append(Machine(prepared, bound, tensors, cache, deadline=deadline,
                                restrict=None))
    limit = budget if budget is not None else default_budget()
    if needed > limit:
        raise_resource(
            "E0305",
            over_budget_message(f"the {len(inputs)} ranks of `{program.name}`", needed, limit),
            span=program.span,
        )
    return machines


def _collective_step(
    program: Program, coll: Collective, machines: Sequence[Machine], bound: Mapping[str, int]
) -> None:
    sources = []
    for rank, m in enumerate(machines):
        st = m.tensors[coll.source]
        if st.written is not None:
            missing = int((~st.written).sum())
            raise ExecutionError(
                f"`{print_collective(coll)}` reads `{coll.source}` on rank {rank}, where "
                f"{missing} of its {st.written.size} elements were never written",
                code="E0351",
                span=coll.span,
            )
        sources.append(st.data)
    groups = group_partition(program, coll.group, bound)
    world = len(machines)
    pairs = permute_pairs(coll, world, bound) if coll.kind == "permute" else ()
    ndim = machines[0].tensors[coll.target].data.ndim
    targets = simulate_collective(coll, sources, groups, pairs=pairs, target_ndim=ndim)
    for rank, (m, value) in enumerate(zip(machines, targets, strict=True)):
        st = m.tensors[coll.target]
        if value.shape != st.data.shape:
            raise ExecutionError(
                f"`{print_collective(coll)}` gives rank {rank} a result of shape "
                f"{list(value.shape)}, but `{coll.target}` is {list(st.data.shape)}",
                code="E0352",
                span=coll.span,
            )
        _store(st, value)


def _store(st: TensorState, value: np.ndarray) -> None:
    data = round_to_dtype(value, st.decl.dtype)
    if not st.data.flags.writeable:  # an input read in place: never a collective target
        st.data = st.data.copy()
    st.data[...] = data
    st.written = None
    st.mark_changed()


def execute_distributed(
    program: Program,
    inputs: Sequence[Mapping[str, np.ndarray]],
    *,
    sizes: Mapping[str, int] | None = None,
    memory_budget_bytes: int | None = None,
) -> list[dict[str, np.ndarray]]:
    """Execute every rank of ``program``; per rank, its outputs (as `execute_program`).

    Raises:
        ExecutionError: faults as `run_distributed`; an output never fully written
            on some rank (E0306).
    """
    results = run_distributed(program, inputs, sizes=sizes,
                              memory_budget_bytes=memory_budget_bytes)
    for rank, result in enumerate(results):
        for name, mask in result.written.items():
            if mask is not None:
                raise ExecutionError(
                    f"output `{name}` is not fully written on rank {rank}: "
                    f"{int((~mask).sum())} of {mask.size} elements never written",
                    code="E0306",
                    span=program.tensor(name).span,
                )
    return [dict(r.outputs) for r in results]
