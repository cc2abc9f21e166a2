"""Replica groups and permute pairs of partitioned HLO as axes of a device mesh.

Contract: partition ``p`` is the device at mesh coordinates ``np.unravel_index(p,
shape)`` (the jit capture rebuilds the mesh in partition order, so this holds); a
group of partitions is the set of those that differ only along some mesh axes
(`mesh_axes_of`), and a collective-permute moves along one axis when every pair does
and the move is the same on every line of that axis (`permute_axes`). Pure numpy.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from math import prod
from typing import TypeAlias

import numpy as np

from solar.diagnostics import FrontendError, Span

__all__ = ["Mesh", "mesh_axes_of", "permute_axes"]

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
