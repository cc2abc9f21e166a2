"""Iteration domains as broadcast index grids, and zero-copy strided views of accesses.

Contract: pure geometry, no IR semantics and no errors of its own. A `Domain` is the
set of iteration points a statement runs over: one numpy axis per enclosing loop
(axis ``k`` for the loop at nesting depth ``k``; axes of loops that run as Python
loops keep extent 1), the values of each vectorised loop variable (an arithmetic
progression, or an explicit sorted array when sampled), scalar bindings (sizes and
loop variables of loops run one iteration at a time) and an optional boolean mask
(guards, triangular bounds) broadcastable to the domain shape.

Arrays computed over a domain always have ``domain.ndim`` dimensions, extent 1 along
axes they do not depend on, so ordinary numpy broadcasting combines them.

`affine_view` turns an access whose subscripts are affine in the domain variables
into a strided view of the tensor (``np.ndarray(buffer=...)``, no copy): a sliding
window, a transposition or a diagonal are all just strides. This is what makes
convolutions and pooling cheap (Note [Domain reuse]
    Running a program builds the same loop domains every time (same sizes, same
    bounds). `Domain.child` keeps them, keyed by loop and bounds, and `recipes` keeps
    what was computed for them (view offsets and strides, write plans), so repeated
    runs and ``seq`` iterations skip that analysis. Masked domains are not kept: a
    value-dependent guard can differ from run to run.

Note [Windows as strides]).

Note [Domain reuse]
    Running a program builds the same loop domains every time (same sizes, same
    bounds). `Domain.child` keeps them, keyed by loop and bounds, and `recipes` keeps
    what was computed for them (view offsets and strides, write plans), so repeated
    runs and ``seq`` iterations skip that analysis. Masked domains are not kept: a
    value-dependent guard can differ from run to run.

Note [Windows as strides]
    ``X[n, c, 2 * h + r - 1, w + s]`` over loops ``n c h r w s`` is the view of ``X``
    with offset ``stride_2 * (-1)`` and per-loop strides ``stride_0, stride_1,
    2 * stride_2, stride_2, stride_3, stride_3``. Where the box of loop values reaches
    outside the tensor (padding), the caller checks that no *active* point does, then
    views a padded copy instead.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np

from solar.ir import Lin

__all__ = [
    "BLOCK_POINTS",
    "CHUNK_POINTS",
    "SMALL_REDUCTION",
    "Axis",
    "Domain",
    "Recipes",
    "TargetPlan",
    "ViewRecipe",
    "affine_view",
    "box_range",
    "is_injective",
    "iter_chunks",
    "split_taps",
]

CHUNK_POINTS = 1 << 22
"""Largest iteration grid (points) a statement evaluates at once; larger ones are chunked."""

_MAX_CHILDREN = 4096

BLOCK_POINTS = 1 << 17
"""Output block (elements) of a short reduction, sized to stay in the L2 cache.

Note [Cache blocking]
    A short reduction (a 3x3 window: nine positions) makes one pass over its output
    per position. Over a whole 12 MB output each pass streams from memory; over an
    output block of 2**17 elements (512 KB in f32) the passes hit the L2 cache, which
    is about twice as fast on the benchmark machine. `blocks` tiles the output.
"""

SMALL_REDUCTION = 32
"""Reductions over at most this many points per target element run as a loop of
whole-block ufunc calls over the reduced positions (windows of convolutions, pooling)."""


@dataclass(frozen=True, slots=True)
class Axis:
    """The values a vectorised loop variable takes on one domain axis.

    Either an arithmetic progression ``start, start + step, ...`` of ``count`` values,
    or an explicit increasing array ``values`` (then ``start``/``step`` are unused).
    """

    var: str
    index: int
    start: int
    step: int
    count: int
    values: np.ndarray | None = field(default=None, compare=False)

    @property
    def is_progression(self) -> bool:
        """True for an arithmetic progression (strided views are possible)."""
        return self.values is None

    def array(self) -> np.ndarray:
        """The values as a 1-D int64 array."""
        if self.values is not None:
            return self.values
        return np.arange(self.count, dtype=np.int64) * self.step + self.start

    @property
    def low(self) -> int:
        """The smallest value."""
        if self.values is not None:
            return int(self.values[0])
        return self.start if self.step > 0 else self.start + self.step * (self.count - 1)

    @property
    def high(self) -> int:
        """The largest value."""
        if self.values is not None:
            return int(self.values[-1])
        return self.start + self.step * (self.count - 1) if self.step > 0 else self.start

    def sliced(self, lo: int, hi: int) -> Axis:
        """The sub-axis of positions ``lo .. hi`` (exclusive)."""
        if self.values is not None:
            vals = self.values[lo:hi]
            return Axis(self.var, self.index, int(vals[0]), 1, len(vals), vals)
        return Axis(self.var, self.index, self.start + lo * self.step, self.step, hi - lo)


ViewRecipe: TypeAlias = tuple[tuple[int, ...], tuple[int, ...], int]
"""A strided view's shape, strides and offset, in bytes (`affine_view`)."""
TargetPlan: TypeAlias = tuple[tuple[Lin, ...], frozenset[int]]
"""A target's affine forms and used domain axes (`solar.validate.writes.target_axes`)."""


@dataclass(slots=True)
class Recipes:
    """Geometry computed for one domain (views, pads, write plans), reused by later runs;
    one typed cache per kind."""

    views: dict[object, ViewRecipe] = field(default_factory=dict)
    pads: dict[object, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    targets: dict[object, TargetPlan | None] = field(default_factory=dict)


class Domain:
    """A set of iteration points (see module docstring). Immutable by convention."""

    __slots__ = (
        "_cache",
        "_children",
        "_nonempty",
        "axes",
        "mask",
        "ndim",
        "recipes",
        "scalars",
        "shape",
    )

    def __init__(
        self,
        ndim: int,
        axes: Mapping[str, Axis],
        scalars: Mapping[str, int],
        mask: np.ndarray | None,
    ) -> None:
        self.ndim = ndim
        self.axes = dict(axes)
        self.scalars = dict(scalars)
        self.mask = mask
        shape = [1] * ndim
        for ax in self.axes.values():
            shape[ax.index] = ax.count
        self.shape = tuple(shape)
        self._cache: dict[str, np.ndarray] = {}
        self._nonempty = False  # known to have an active point
        self._children: dict[object, Domain] = {}
        self.recipes = Recipes()
        """Geometry computed for this domain (views, write plans), reused by later runs."""

    @property
    def volume(self) -> int:
        """Number of points in the box (ignoring the mask)."""
        return math.prod(self.shape)

    def var_array(self, name: str) -> np.ndarray:
        """The values of a vectorised variable, shaped to broadcast along its axis."""
        arr = self._cache.get(name)
        if arr is None:
            ax = self.axes[name]
            shape = [1] * self.ndim
            shape[ax.index] = ax.count
            arr = ax.array().reshape(shape)
            self._cache[name] = arr
        return arr

    def child(self, key: object, make: Callable[[], Domain]) -> Domain:
        """A sub-domain built once per ``key`` and kept (Note [Domain reuse])."""
        found = self._children.get(key)
        if found is None:
            found = make()
            if len(self._children) < _MAX_CHILDREN:
                self._children[key] = found
        return found

    def with_axis(self, axis: Axis) -> Domain:
        """This domain with one more vectorised variable."""
        mask = self.mask
        return Domain(self.ndim, {**self.axes, axis.var: axis}, self.scalars, mask)

    def with_scalar(self, name: str, value: int) -> Domain:
        """This domain with a loop variable bound to one value."""
        return Domain(self.ndim, self.axes, {**self.scalars, name: value}, self.mask)

    def with_mask(self, mask: np.ndarray | None) -> Domain:
        """This domain restricted to the points where ``mask`` holds (``None``: no change)."""
        if mask is None:
            return self
        mask = np.asarray(mask, dtype=bool)
        combined = mask if self.mask is None else (self.mask & mask)
        return Domain(self.ndim, self.axes, self.scalars, combined)

    def is_empty(self) -> bool:
        """True when no point of the domain is active."""
        if self._nonempty:
            return False
        if any(ax.count == 0 for ax in self.axes.values()):
            return True
        empty = self.mask is not None and not bool(self.mask.any())
        self._nonempty = not empty
        return empty

    def sliced(self, axis_index: int, lo: int, hi: int) -> Domain:
        """The sub-domain whose axis ``axis_index`` keeps positions ``lo .. hi``."""
        axes = {
            v: (ax.sliced(lo, hi) if ax.index == axis_index else ax) for v, ax in self.axes.items()
        }
        mask = self.mask
        if mask is not None and mask.shape[axis_index] > 1:
            index = [slice(None)] * self.ndim
            index[axis_index] = slice(lo, hi)
            mask = mask[tuple(index)]
        piece = Domain(self.ndim, axes, self.scalars, mask)
        piece._nonempty = self._nonempty and mask is self.mask and hi > lo
        return piece

    def point(self, coords: Sequence[int]) -> dict[str, int]:
        """Variable values at a domain coordinate (one position per axis)."""
        out = {}
        for v, ax in self.axes.items():
            pos = coords[ax.index] if ax.count > 1 else 0
            out[v] = int(ax.array()[pos])
        return out


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Broadcast shapes of arrays over one domain (same rank, or 0-d scalars).

    Faster than ``np.broadcast_shapes`` on the executor's hot path.

    >>> broadcast_shape((3, 1), (1, 4), ())
    (3, 4)
    """
    ranked = [s for s in shapes if s]
    if not ranked:
        return ()
    if any(len(s) != len(ranked[0]) for s in ranked):
        return tuple(np.broadcast_shapes(*ranked))
    return tuple(max(dims) for dims in zip(*ranked, strict=True))


def iter_chunks(domain: Domain, limit: int) -> Iterator[Domain]:
    """Split a domain along its outer axes into pieces of at most ``limit`` points.

    Chunks come in iteration order (outer axis ascending), so "last write wins"
    stays sequential. An axis is split only when the axes inside it fit no more.

    >>> d = Domain(2, {"i": Axis("i", 0, 0, 1, 10), "j": Axis("j", 1, 0, 1, 10)}, {}, None)
    >>> [c.shape for c in iter_chunks(d, 30)]
    [(3, 10), (3, 10), (3, 10), (1, 10)]
    """
    if domain.volume <= limit:
        yield domain
        return
    for axis_index, extent in enumerate(domain.shape):
        if extent <= 1:
            continue
        inner = domain.volume // extent
        step = max(1, limit // max(inner, 1))
        for lo in range(0, extent, step):
            yield from iter_chunks(domain.sliced(axis_index, lo, min(extent, lo + step)), limit)
        return
    yield domain


def blocks(shape: Sequence[int], limit: int | None = None) -> Iterator[tuple[slice, ...]]:
    """Index tuples tiling ``shape`` in row-major order, each of at most ``limit`` elements.

    Only the leading axes are cut, so each block is a few contiguous runs of the
    innermost axes (a single row longer than ``limit`` is one block).

    >>> [[(s.start, s.stop) for s in b] for b in blocks((2, 3), limit=2)]
    [[(0, 1), (0, 2)], [(0, 1), (2, 3)], [(1, 2), (0, 2)], [(1, 2), (2, 3)]]
    """
    limit = BLOCK_POINTS if limit is None else limit
    n = len(shape)
    inner = 1
    cut = n  # cut axis: blocks span axes cut+1 .. n-1 completely
    while cut > 0 and inner * shape[cut - 1] <= limit:
        cut -= 1
        inner *= shape[cut]
    if cut == 0:
        yield tuple(slice(0, m) for m in shape)
        return
    axis = cut - 1
    step = max(1, limit // inner)
    tail = tuple(slice(0, m) for m in shape[cut:])
    for outer in np.ndindex(*shape[:axis]):
        head = tuple(slice(i, i + 1) for i in outer)
        for lo in range(0, shape[axis], step):
            yield (*head, slice(lo, min(shape[axis], lo + step)), *tail)


def box_range(form: Lin, domain: Domain) -> tuple[int, int]:
    """Inclusive range of an affine subscript over the box of ``domain``."""
    lo = hi = form.const
    for var, coef in form.coefs:
        ax = domain.axes.get(var)
        if ax is None:
            value = coef * domain.scalars[var]
            lo += value
            hi += value
            continue
        a, b = coef * ax.low, coef * ax.high
        lo += min(a, b)
        hi += max(a, b)
    return lo, hi


def affine_view(
    base: np.ndarray,
    forms: Sequence[Lin],
    domain: Domain,
    shift: Sequence[int] | None = None,
) -> np.ndarray:
    """A strided view of ``base`` giving ``base[forms]`` at every domain point.

    Args:
        base: a C-contiguous array; its rank equals ``len(forms)``.
        forms: one affine subscript per dimension, over the domain variables.
        domain: all variables of ``forms`` are vectorised progressions or scalars.
        shift: added to each subscript (the low padding of a padded copy).

    Returns:
        An array of ``domain.ndim`` dimensions (extent 1 on axes the access does not
        depend on) sharing memory with ``base``; writeable when ``base`` is. The
        caller guarantees every subscript over the box lies inside ``base``.
    """
    item = base.itemsize
    key = (id(forms), base.shape, item, None if shift is None else tuple(shift))
    recipe = domain.recipes.views.get(key)
    if recipe is not None:
        shape_r, strides_r, offset_r = recipe
        return np.ndarray(
            shape_r, dtype=base.dtype, buffer=base, offset=offset_r, strides=strides_r
        )
    elem_strides = [s // item for s in base.strides]
    offset = 0
    shape = [1] * domain.ndim
    strides = [0] * domain.ndim
    for dim, form in enumerate(forms):
        stride = elem_strides[dim]
        const = form.const + (shift[dim] if shift is not None else 0)
        for var, coef in form.coefs:
            ax = domain.axes.get(var)
            if ax is None:
                const += coef * domain.scalars[var]
                continue
            const += coef * ax.start
            strides[ax.index] += stride * coef * ax.step
            shape[ax.index] = ax.count
        offset += stride * const
    for k, extent in enumerate(shape):
        if extent == 1:
            strides[k] = 0
    shape_t, strides_t = tuple(shape), tuple(s * item for s in strides)
    domain.recipes.views[key] = (shape_t, strides_t, offset * item)
    return np.ndarray(
        shape_t, dtype=base.dtype, buffer=base, offset=offset * item, strides=strides_t
    )


def is_injective(forms: Sequence[Lin], base_shape: Sequence[int], domain: Domain) -> bool:
    """True when distinct box points map to distinct elements (writes do not collide).

    Classic non-overlap test for strided layouts: sorted by absolute stride, each
    axis stride must exceed the span of all smaller axes.
    """
    seen: set[str] = set()
    simple = True
    for form in forms:
        moving = [v for v, _ in form.coefs if v in domain.axes and domain.axes[v].count > 1]
        if len(moving) > 1 or (moving and moving[0] in seen):
            simple = False
            break
        seen.update(moving)
    if simple:  # one distinct loop variable per subscript (the common case)
        return all(domain.axes[v].is_progression for v in seen)
    elem_strides = [1] * len(base_shape)
    for d in range(len(base_shape) - 2, -1, -1):
        elem_strides[d] = elem_strides[d + 1] * base_shape[d + 1]
    per_axis: dict[int, int] = {}
    extents: dict[int, int] = {}
    for dim, form in enumerate(forms):
        for var, coef in form.coefs:
            ax = domain.axes.get(var)
            if ax is None or ax.count <= 1:
                continue
            if not ax.is_progression:
                return False
            per_axis[ax.index] = per_axis.get(ax.index, 0) + elem_strides[dim] * coef * ax.step
            extents[ax.index] = ax.count
    span = 0
    for k in sorted(per_axis, key=lambda k: abs(per_axis[k])):
        stride = abs(per_axis[k])
        if stride <= span:
            return False
        span += stride * (extents[k] - 1)
    return True


MAX_TAPS = 343
"""Most pieces `split_taps` cuts a scatter into (a 7x7x7 transposed-convolution kernel)."""


def split_taps(domain: Domain, forms: Sequence[Lin]) -> list[Domain] | None:
    """Cut a scatter domain into pieces whose target is a strided view (Note [Taps]).

    Note [Taps]: a transposed convolution accumulates ``Y[s * i + r] += X[i] * W[r]``:
    a subscript combining several loop variables, so no strided view of ``Y`` covers the
    domain and the update would run point by point (every point of a 9-deep grid).
    Fixing the smaller variables of each such subscript (the kernel taps ``r``) leaves
    one variable per subscript: each piece is a strided update (a contraction over the
    input channels), and the pieces partition the points. Each piece is then trimmed to
    the box of its active points, so a padding guard (``0 <= s * i + r - p``) no longer
    reaches outside ``Y``.

    Returns:
        The pieces (masked-out ones dropped), or ``None`` when no subscript combines
        vectorised variables or the pieces would exceed `MAX_TAPS`.
    """
    taps: set[str] = set()
    for form in forms:
        live = [v for v, _ in form.coefs if v in domain.axes and domain.axes[v].count > 1]
        if len(live) > 1:
            keep = max(live, key=lambda v: (domain.axes[v].count, v))
            taps.update(v for v in live if v != keep)
    if not taps:
        return None
    axes = sorted((domain.axes[v] for v in taps), key=lambda ax: ax.index)
    if math.prod(ax.count for ax in axes) > MAX_TAPS:
        return None
    pieces = []
    for combo in itertools.product(*(range(ax.count) for ax in axes)):
        piece = domain
        for ax, pos in zip(axes, combo, strict=True):
            piece = piece.sliced(ax.index, pos, pos + 1)
        trimmed = _active_box(piece)
        if trimmed is not None:
            pieces.append(trimmed)
    return pieces


def _active_box(domain: Domain) -> Domain | None:
    """``domain`` cut to the bounding box of its active points (``None``: none active)."""
    mask = domain.mask
    if mask is None:
        return domain
    if not mask.any():
        return None
    for k in range(domain.ndim):
        if mask.shape[k] <= 1:
            continue
        others = tuple(j for j in range(mask.ndim) if j != k)
        active = np.flatnonzero(mask.any(axis=others))
        lo, hi = int(active[0]), int(active[-1]) + 1
        if (lo, hi) != (0, mask.shape[k]):
            domain = domain.sliced(k, lo, hi)
            mask = domain.mask
            assert mask is not None
    if mask.all():  # the guard only cut the box: no operand needs masking any more
        return Domain(domain.ndim, domain.axes, domain.scalars, None)
    return domain
