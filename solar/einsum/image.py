"""Access images: the distinct elements one access touches, and unions of them.

Contract: ``(CountContext, Domain, Access) -> AccessImage`` and
``Sequence[AccessImage] -> Count``. An image's count is exact or a lower bound. A
union is exact when one image provably contains all the others, or (summed) when the
images are disjoint boxes; otherwise it is the max, a lower bound. Containment is
proved structurally (the same canonical key, or the same subscripts over an extended
domain), never by evaluating sizes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from solar.einsum.count import Count
from solar.einsum.counter import CountContext
from solar.einsum.domain import Domain, LoopDim
from solar.ir import Access, Binary, Expr, IntLit, Name, TensorDecl, linear_form, walk_exprs

__all__ = [
    "SECTOR_BYTES",
    "AccessImage",
    "access_image",
    "contains",
    "sector_factor",
    "union_by_key",
    "union_images",
]

SECTOR_BYTES = 32
"""The smallest unit of DRAM traffic (Note [Sectors]): NVIDIA's L2 sector, and the minimum
burst of every DRAM standard the bundled devices use (HBM2e/HBM3 pseudo-channel, GDDR6/6X,
LPDDR5/5X: 32 bytes)."""

_ZERO = Count.of(0)
_LOWER_ZERO = Count.of(0, exact=False)
_ZERO_KEY = "zero"
"""The key of an access that may not execute (value-dependent)."""


@dataclass(frozen=True, slots=True)
class AccessImage:
    """An access image: its count, canonical key and what containment needs."""

    count: Count
    key: str
    loops: tuple[LoopDim, ...]
    guards: tuple[Expr, ...]
    indices: tuple[Expr, ...]

    @staticmethod
    def unexecuted() -> AccessImage:
        """The image of an access that may not execute (under a value-dependent branch).

        Its count is zero as a lower bound, and it contains no other image.
        """
        return AccessImage(_LOWER_ZERO, _ZERO_KEY, (), (), ())


def access_image(ctx: CountContext, domain: Domain, access: Access,
                 decl: TensorDecl | None = None) -> AccessImage:
    """Distinct elements an access touches; indirect subscripts are projected away.

    With the tensor's declaration, a strided access is charged whole sectors: the count
    is then in element-equivalents of the sectors it touches (Note [Sectors]).
    """
    direct = tuple(i for i in access.indices if not any(isinstance(e, Access)
                                                        for e in walk_exprs(i)))
    count, key = ctx.image(domain, direct)
    if len(direct) != len(access.indices):
        # Note [Gathers]: the rows an index tensor selects are data-dependent; the
        # projection onto the direct subscripts (at least one row) is a lower bound.
        count, key = Count(count.expr, count.deferred, False), f"{key}|gather"
    elif decl is not None:
        factor = sector_factor(decl, access.indices, frozenset(domain.vars))
        if factor > 1:
            count, key = count * factor, f"{key}|sectors{factor}"
    return AccessImage(count, key, domain.loops, domain.guards, access.indices)


# Note [Sectors]: DRAM (and NVIDIA's L2) move whole 32-byte sectors, so a strided read such
# as ``x[:, ::8]`` of fp32 moves every sector it touches, 8x its elements. Where the last
# subscript is affine in the loop variables with literal coefficients, all divisible by g,
# and g divides the (literal) last extent L, every touched element's linear offset is
# congruent to one constant modulo g (row-major: the other strides are multiples of L).
# Any 32 consecutive bytes (w = 32 / itemsize elements, whatever the alignment of the
# tensor) then hold at most m = ceil(w / g) touched elements, so the access touches at
# least elements / m sectors, i.e. at least elements * w / m element-equivalents of
# traffic. The count is multiplied by floor(w / m) (a lower bound of w / m); it never
# exceeds the tensor (floor(w / m) <= g). Anything else (a size symbol or a division in
# the last subscript, a gather) keeps the element count, a lower bound.


def sector_factor(decl: TensorDecl, indices: Sequence[Expr], loop_vars: frozenset[str]) -> int:
    """The factor by which whole sectors exceed the elements an access touches (>= 1).

    >>> from solar.ir import DType, IntLit, Name, TensorDecl
    >>> from solar.ir.parser import parse_expr
    >>> x = TensorDecl("x", "input", DType.F32, (IntLit(64), IntLit(64)))
    >>> sector_factor(x, (Name("i"), parse_expr("8 * j")), frozenset({"i", "j"}))
    8
    >>> sector_factor(x, (Name("i"), parse_expr("2 * j + 1")), frozenset({"i", "j"}))
    2
    >>> sector_factor(x, (Name("i"), Name("j")), frozenset({"i", "j"}))
    1
    """
    itemsize = decl.dtype.itemsize_bytes
    w = SECTOR_BYTES // itemsize if itemsize else 0
    if w <= 1 or not indices:
        return 1
    lin = linear_form(indices[-1], {}, loop_vars=loop_vars)
    if lin is None or not lin.coefs:
        return 1
    g = 0
    for _, c in lin.coefs:
        g = math.gcd(g, abs(c))
    if len(decl.shape) > 1:
        extent = decl.shape[-1]
        if not isinstance(extent, IntLit):
            return 1
        g = math.gcd(g, extent.value)
    if g <= 1:
        return 1
    return max(1, w // -(-w // g))


def contains(big: AccessImage, small: AccessImage) -> bool:
    """True if ``small``'s image is provably a subset of ``big``'s.

    Same key, or the same subscripts over a domain that extends ``big``'s loops
    (as a prefix) and adds guards: every point of ``small`` projects onto a point of
    ``big`` with the same subscript values.
    """
    if big.key == small.key:
        return True
    if big.key == _ZERO_KEY:
        return False
    return (
        big.indices == small.indices
        and small.loops[: len(big.loops)] == big.loops
        and set(big.guards) <= set(small.guards)
    )


def union_images(items: Sequence[AccessImage]) -> tuple[Count, AccessImage | None]:
    """Union of images: exact when one contains all others, else the max (a lower bound)."""
    if not items:
        return _ZERO, None
    uniq = list({img.key: img for img in items}.values())
    survivors = [
        a for i, a in enumerate(uniq)
        if not any(
            j != i and contains(b, a) and (not contains(a, b) or j < i)
            for j, b in enumerate(uniq)
        )
    ]
    if len(survivors) == 1:
        return survivors[0].count, survivors[0]
    out = survivors[0].count
    if _disjoint_boxes(survivors):
        # Note [Disjoint boxes]: pieces of one tensor (``cat``/``stack`` outputs, ``split``
        # inputs) are disjoint boxes of subscripts, so the union is the sum.
        for img in survivors[1:]:
            out = out + img.count
        return out, None
    return Count.max_of([img.count for img in survivors], exact=False), None


def union_by_key(items: Sequence[tuple[Count, str]]) -> Count:
    """Union across kernels: exact when all images share a key, else the max."""
    by_key = {k: c for c, k in items if not c.is_zero}
    if not by_key:
        return _ZERO
    counts = list(by_key.values())
    return counts[0] if len(counts) == 1 else Count.max_of(counts, exact=False)


def _offset(e: Expr) -> tuple[str | None, int] | None:
    """``(var, c)`` for a subscript ``var + c``/``var - c``/``var``, ``(None, c)`` for ``c``."""
    match e:
        case IntLit(value=c):
            return None, c
        case Name(name=v):
            return v, 0
        case Binary(op="+", lhs=Name(name=v), rhs=IntLit(value=c)):
            return v, c
        case Binary(op="+", lhs=IntLit(value=c), rhs=Name(name=v)):
            return v, c
        case Binary(op="-", lhs=Name(name=v), rhs=IntLit(value=c)):
            return v, -c
        case _:
            return None


def _box(img: AccessImage) -> tuple[tuple[int, int] | None, ...] | None:
    """Per dimension, a literal range ``[lo, hi)`` that holds the image's subscripts in
    that dim, or None where none is known (None for an image that may not execute).

    A subscript ``var + c`` over a step-1 loop with literal bounds gives the loop's range
    shifted by ``c``, a constant ``c`` gives ``[c, c + 1)``; anything else (a size-bound
    loop, another affine form) is unknown. Guards only shrink the image, so the ranges
    hold under them too (Note [Disjoint boxes]).
    """
    if img.key == _ZERO_KEY:
        return None
    ranges: dict[str, tuple[int, int] | None] = {}
    for lp in img.loops:
        lo, hi = lp.lo, lp.hi
        literal = isinstance(lo, IntLit) and isinstance(hi, IntLit) and lp.step == 1
        ranges[lp.var] = (int(lo.value), int(hi.value)) if literal else None  # type: ignore[union-attr]
    box: list[tuple[int, int] | None] = []
    for e in img.indices:
        off = _offset(e)
        if off is None or (off[0] is not None and ranges.get(off[0]) is None):
            box.append(None)
            continue
        var, c = off
        r = (0, 1) if var is None else ranges[var]
        assert r is not None
        box.append((r[0] + c, r[1] + c))
    return tuple(box)


# Note [Disjoint boxes]: the pieces ``cat``/``stack`` write into one output (and ``split``
# reads of one input) lie in disjoint slabs of it: ``y[i + 1, j]`` over ``i in 0 .. 1``
# and ``y[i, j]`` over the same loop differ in dim 0, whatever the other dims' extents
# (a size ``N`` in ``j in 0 .. N`` is the same range in both). Two images are disjoint when
# one dim has known, non-intersecting ranges in both; then their union is the sum of their
# counts (each exact or a lower bound). Before, every dim had to be literal, so the 256
# rows a ``cat`` of 256 ``[1, N]`` tensors writes counted as one row.


def _disjoint_boxes(items: Sequence[AccessImage]) -> bool:
    """True if every two images are separated in some dim (see `_box`)."""
    boxes = [_box(img) for img in items]
    if any(b is None for b in boxes):
        return False
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a is not None and b is not None
            if len(a) != len(b) or not any(
                ra is not None and rb is not None and (ra[1] <= rb[0] or rb[1] <= ra[0])
                for ra, rb in zip(a, b, strict=True)
            ):
                return False
    return True
