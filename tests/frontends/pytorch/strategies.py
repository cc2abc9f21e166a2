"""Hypothesis strategies for the PyTorch lowering tests: small shapes and broadcasts."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["broadcast_pair", "dims_for", "shapes"]


def shapes(
    min_rank: int = 0, max_rank: int = 3, max_side: int = 4
) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes with odd sizes and size-1 dims."""
    return st.lists(st.integers(1, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def broadcast_pair(draw: st.DrawFn, max_rank: int = 3) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast together (dims dropped or set to 1 in the second)."""
    a = draw(shapes(0, max_rank))
    b = list(a[draw(st.integers(0, len(a))) :])
    for k in range(len(b)):
        if draw(st.booleans()):
            b[k] = 1
    if draw(st.booleans()):
        return tuple(b), a
    return a, tuple(b)


@st.composite
def dims_for(draw: st.DrawFn, rank: int) -> list[int]:
    """A non-empty subset of dims, some given as negative numbers."""
    chosen = draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    return [d - rank if draw(st.booleans()) else d for d in chosen]
