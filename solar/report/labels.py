"""Greedy placement of point labels on a matplotlib axes, without overlaps.

Contract: ``(axes, anchors, obstacles) -> labels drawn, their boxes returned``. No new
dependency: a small adjustText-like search in display coordinates.

Note [Label placement]
~~~~~~~~~~~~~~~~~~~~~~
Labels are placed in the order given (the caller puts the most important first): each
tries a ring of offsets around its point, nearest first, and takes the first whose text
box stays inside the axes and overlaps no obstacle (points, markers, the legend) and
no label placed before it. A label pushed away from its point gets a leader line; a
label with no free place is left out (the caller names the kernel elsewhere).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

__all__ = ["Box", "overlap", "place_labels"]

Box: TypeAlias = tuple[float, float, float, float]
"""A display-coordinate box ``(x0, y0, x1, y1)`` in pixels."""

_RING = tuple(
    (dx, dy)
    for r in (6, 14, 24, 36, 50, 66, 84)
    for dx, dy in ((r, -r), (r, r), (-r, r), (-r, -r), (r, 0), (0, -r), (-r, 0), (0, r))
)
"""Label offsets in points, nearest first."""

_LEADER_FROM_PT = 8
"""Offsets beyond this many points get a leader line to their point."""


def overlap(a: Box, b: Box) -> bool:
    """Whether two boxes overlap (touching edges do not).

    >>> overlap((0, 0, 2, 2), (1, 1, 3, 3)), overlap((0, 0, 1, 1), (1, 0, 2, 1))
    (True, False)
    """
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_labels(
    ax: Any,
    anchors: Sequence[tuple[tuple[float, float], str]],
    *,
    obstacles: Sequence[Box],
    renderer: Any,
    fontsize: float = 7,
) -> list[Box]:
    """Annotate each ``(data point, text)`` where it is free (Note [Label placement]).

    Returns:
        The display boxes of the labels placed, in the order placed.
    """
    from matplotlib.text import Text

    axes_box = ax.get_window_extent(renderer)
    taken = list(obstacles)
    placed: list[Box] = []
    for xy, label in anchors:
        for dx, dy in _RING:
            leader = max(abs(dx), abs(dy)) > _LEADER_FROM_PT
            text = ax.annotate(
                label,
                xy,
                xytext=(dx, dy),
                textcoords="offset points",
                ha="left" if dx > 0 else "right" if dx < 0 else "center",
                va="bottom" if dy > 0 else "top" if dy < 0 else "center",
                fontsize=fontsize,
                zorder=6,
                arrowprops={
                    "arrowstyle": "-",
                    "color": "0.45",
                    "linewidth": 0.6,
                    "shrinkA": 1,
                    "shrinkB": 4,
                }
                if leader
                else None,
            )
            text.update_positions(renderer)
            bb = Text.get_window_extent(text, renderer)  # the text alone, not its leader
            box = (bb.x0 - 1, bb.y0 - 1, bb.x1 + 1, bb.y1 + 1)
            inside = (
                axes_box.x0 <= box[0]
                and box[2] <= axes_box.x1
                and axes_box.y0 <= box[1]
                and box[3] <= axes_box.y1
            )
            if inside and not any(overlap(box, t) for t in taken):
                taken.append(box)
                placed.append(box)
                break
            text.remove()
    return placed
