"""Replica groups and permute pairs of partitioned HLO as axes of a device mesh, and
its partition-id arithmetic.

Contract: partition ``p`` is the device at mesh coordinates ``np.unravel_index(p,
shape)`` (the jit capture rebuilds the mesh in partition order, so this holds); a
group of partitions is the set of those that differ only along some mesh axes
(`mesh_axes_of`), and a collective-permute moves along one axis when every pair does
and the move is the same on every line of that axis (`permute_axes`). Pure numpy.
`u32_is_index_math` says when the u32 values derived from ``partition-id`` may be
replayed as s32 (Note [u32 indices]).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from math import prod
from typing import TypeAlias

import numpy as np

from solar.diagnostics import FrontendError, Span
from solar.frontends.jaxfe.hlo_parse import HloModule, HloType, TupleType, literal_values

__all__ = ["Mesh", "mesh_axes_of", "permute_axes", "u32_is_index_math"]

Mesh: TypeAlias = Sequence[tuple[str, int]]
"""``(axis name, size)`` in mesh order."""


def mesh_axes_of(
    groups: Sequence[Sequence[int]], mesh: Mesh, *, ordered: bool
) -> tuple[str, ...]:
    """The mesh axes whose groups ``groups`` are (major axis first), partition ``p``
    being the device at ``np.unravel_index(p, shape)``. With ``ordered`` the order of
    each group's members must be the row-major order over the axes (a gather's order).

    Raises:
        FrontendError: no such axes (E0551).

    >>> mesh_axes_of([[0, 2], [1, 3]], [("dp", 2), ("tp", 2)], ordered=True)
    ('dp',)
    >>> mesh_axes_of([[0, 1, 2, 3]], [("dp", 2), ("tp", 2)], ordered=True)
    ('dp', 'tp')
    """
    shape = tuple(s for _, s in mesh)
    names = [n for n, _ in mesh]
    ids = np.arange(prod(shape)).reshape(shape)
    want = {tuple(g) if ordered else tuple(sorted(g)) for g in groups}
    useful = [k for k, s in enumerate(shape) if s > 1]
    for r in range(len(useful) + 1):
        for combo in itertools.permutations(useful, r):
            rest = [k for k in range(len(shape)) if k not in combo]
            size = prod(shape[k] for k in combo)
            got = ids.transpose(rest + list(combo)).reshape(-1, size)
            if {tuple(int(p) for p in g) for g in got} == want:
                return tuple(names[k] for k in combo)
    raise FrontendError(
        f"replica groups {[list(g) for g in groups][:4]} are not the groups of any axes of "
        f"the mesh ({', '.join(f'{n}={s}' for n, s in mesh)})",
        code="E0551",
    )


def permute_axes(
    pairs: Sequence[tuple[int, ...]], mesh: Mesh, name: str, span: Span | None = None
) -> tuple[str | tuple[str, ...], list[tuple[int, int]]]:
    """The one mesh axis the pairs move along and the move in its coordinates; else all
    the mesh's axes and the pairs themselves (the row-major index over the axes is the
    partition id), which the shard_map lowering leaves uncovered (several axes)."""
    shape = tuple(s for _, s in mesh)
    world = prod(shape)
    coords = np.array(np.unravel_index(np.arange(world), shape)).T
    want = {(int(p[0]), int(p[1])) for p in pairs if len(p) == 2}
    if len(want) != len(pairs) or not all(0 <= p < world and 0 <= q < world for p, q in want):
        raise FrontendError(f"collective-permute %{name}: source_target_pairs are not "
                            "pairs of partitions", code="E0570", span=span)

    def same_elsewhere(p: int, q: int, k: int) -> bool:
        return all(coords[p][j] == coords[q][j] for j in range(len(shape)) if j != k)

    for k, (name, size) in enumerate(mesh):
        if size == 1:
            continue
        moves = {(int(coords[s][k]), int(coords[t][k])) for s, t in want
                 if same_elsewhere(s, t, k)}
        implied = {(p, q) for p in range(world) for q in range(world)
                   if (int(coords[p][k]), int(coords[q][k])) in moves and same_elsewhere(p, q, k)}
        if implied == want:
            return name, sorted(moves)
    return tuple(n for n, s in mesh if s > 1), sorted(want)


# Note [u32 indices]
# ~~~~~~~~~~~~~~~~~~
# The partitioner computes each device's offsets from `partition-id`, a u32, through
# u32 tables indexed by it (`constant({0, 0, 1, 1})`, dynamic-slice, reshape, multiply).
# The IR has no unsigned types, so such ops would stay uncovered (and the program could
# not be validated). When every u32 value of a module is that kind of index arithmetic
# (u32 only from partition-id, constants below 2^31 and the ops below; no u32 parameter,
# output, or conversion to u32) the replay computes them in s32, where they take the same
# values. Any other u32 use (bit manipulation, random bits) keeps u32 (and is reported
# uncovered by the lowering).
_U32_INDEX_OPS = frozenset({
    "partition-id", "constant", "dynamic-slice", "reshape", "broadcast", "slice", "add",
    "subtract", "multiply", "compare", "select", "clamp", "maximum", "minimum",
    "concatenate", "copy", "transpose", "tuple", "get-tuple-element", "convert",
})


def _u32(t: HloType) -> bool:
    if isinstance(t, TupleType):
        return any(_u32(e) for e in t.elements)
    return t.dtype == "u32"


def u32_is_index_math(module: HloModule) -> bool:
    """Whether every u32 value of ``module`` is partition index arithmetic (the Note)."""
    entry = module.entry_computation
    if any(_u32(t) for _, t in entry.params) or _u32(entry.root.type):
        return False
    for comp in module.computations.values():
        types = {i.name: i.type for i in comp.instructions}
        for i in comp.instructions:
            if _u32(i.type) and (i.opcode == "convert" or i.opcode not in _U32_INDEX_OPS):
                return False
            if any(_u32(types[o]) for o in i.operands if o in types) and (
                    i.opcode not in _U32_INDEX_OPS):
                return False
            if i.opcode == "constant" and _u32(i.type):
                values = np.asarray(literal_values(i.literal), dtype=np.float64)
                if values.size and values.max() >= 2**31:
                    return False
    return True
