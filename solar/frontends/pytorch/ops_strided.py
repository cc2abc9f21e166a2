"""Lowerings of stride-level views: ``as_strided`` and its in-place form ``as_strided_``.

Contract: ``as_strided(x, size, stride, offset)`` reads eager's storage of ``x`` at
``offset + sum(i_k * stride_k)``. The lowering turns that into an index map onto ``x``'s
logical indices using the strides and storage offset ``x`` had when the call ran
(`OpCall.arg_layouts`), so the result is a free view (no kernel, no traffic), exactly
as in eager; ``as_strided_`` is the same view bound to the tensor it restrides (the
driver looks in-place ops up under their functional name).

Note [as_strided index maps]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Two cases, both exact:

* *Affine*: every dim of the result (of size > 1) steps like one distinct dim of ``x``
  (same stride) and the offset difference decomposes on ``x``'s dims; then
  ``j_k = c_k + i_m`` (and ``j_k = c_k`` for the others). This is a permutation,
  slice or restride of ``x`` (torchvision's ConvNeXt restrides a pooled ``(N, C, 1, 1)``
  to channels-last, Swin's window ops go through it).
* *Gather*: otherwise, when ``x`` is dense (its elements fill ``numel`` consecutive
  storage positions, in any dim order), the storage position ``p`` of each result
  element is unravelled onto ``x``'s dims: ``j_k = (p - o_x) // s_k % n_k``. This is
  still a view (eager copies nothing), read through ``//`` and ``%``.

Anything else (an ``x`` with gaps or overlaps that the result leaves, a read outside
``x``'s own elements) raises `UnsupportedOpError`: the op is then reported uncovered
with its share, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.frontends.kit import TensorInfo, UnsupportedOpError, iadd_const_last, imul_const_last
from solar.frontends.pytorch.ops_movement import idiv, imod
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Expr, IntLit

__all__ = ["decompose_offset", "strided_map_affine"]


def decompose_offset(
    delta: int, shape: Sequence[int], stride: Sequence[int]
) -> tuple[int, ...] | None:
    """Coordinates ``c`` with ``sum(c_k * stride_k) == delta`` and ``0 <= c_k < shape_k``.

    Greedy over the dims by decreasing stride; ``None`` when that finds none.

    >>> decompose_offset(7, (2, 3, 4), (12, 4, 1))
    (0, 1, 3)
    >>> decompose_offset(13, (2, 2), (4, 1)) is None
    True
    """
    coords = [0] * len(shape)
    rest = delta
    order = sorted((k for k in range(len(shape)) if shape[k] > 1), key=lambda k: -stride[k])
    for k in order:
        if stride[k] <= 0:
            continue
        c = min(rest // stride[k], shape[k] - 1)
        coords[k] = c
        rest -= c * stride[k]
    return tuple(coords) if rest == 0 else None


def strided_map_affine(
    x_shape: Sequence[int],
    x_stride: Sequence[int],
    delta: int,
    size: Sequence[int],
    stride: Sequence[int],
) -> tuple[tuple[int, ...], tuple[int | None, ...]] | None:
    """The affine case of Note [as_strided index maps]: ``(c, match)`` or ``None``.

    ``match[k]`` is the result dim that steps ``x``'s dim ``k`` (``None``: fixed at
    ``c[k]``); ``j_k = c_k + i_{match[k]}``.

    >>> strided_map_affine((1, 768, 1, 1), (768, 1, 1, 1), 0, (1, 768, 1, 1), (768, 1, 768, 768))
    ((0, 0, 0, 0), (None, 1, None, None))
    >>> strided_map_affine((4, 6), (6, 1), 1, (3, 4), (1, 6))
    ((0, 1), (1, 0))
    """
    coords = decompose_offset(delta, x_shape, x_stride)
    if coords is None:
        return None
    match: list[int | None] = [None] * len(x_shape)
    for m, (n, s) in enumerate(zip(size, stride, strict=True)):
        if n == 1:
            continue
        cands = [
            k for k in range(len(x_shape))
            if x_shape[k] > 1 and x_stride[k] == s and match[k] is None
        ]  # fmt: skip
        if len(cands) != 1 or coords[cands[0]] + (n - 1) * 1 >= x_shape[cands[0]]:
            return None
        match[cands[0]] = m
    return coords, tuple(match)


def _dense_order(shape: Sequence[int], stride: Sequence[int]) -> list[int] | None:
    """``x``'s dims (size > 1) from innermost to outermost if ``x`` is dense, else ``None``."""
    dims = sorted((k for k in range(len(shape)) if shape[k] > 1), key=lambda k: stride[k])
    expect = 1
    for k in dims:
        if stride[k] != expect:
            return None
        expect *= shape[k]
    return dims


def _gather_view(
    x: TensorInfo,
    x_stride: Sequence[int],
    delta: int,
    size: Sequence[int],
    stride: Sequence[int],
) -> TensorInfo:
    dims = _dense_order(x.shape, x_stride)
    if dims is None:
        raise UnsupportedOpError("as_strided of a tensor with gaps or overlaps")
    hi = delta + sum((n - 1) * s for n, s in zip(size, stride, strict=True) if n > 0)
    if delta < 0 or hi >= x.numel:
        raise UnsupportedOpError("as_strided reads outside its input's elements")
    outer = dims[-1] if dims else None

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        pos: Expr = IntLit(delta)
        for i, n, s in zip(idx, size, stride, strict=True):
            if n > 1:
                pos = iadd_const_last(pos, imul_const_last(i, s))
        res: list[Expr] = [IntLit(0)] * x.rank
        for k in dims:
            part = idiv(pos, x_stride[k])
            res[k] = part if k == outer else imod(part, x.shape[k])
        return tuple(res)

    return x.view(size, index_map)


@LOWERINGS.register("aten.as_strided")
def _as_strided(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = call.args[0]
    layout = call.arg_layouts[0] if call.arg_layouts else None
    if not isinstance(x, TensorInfo) or layout is None:
        raise UnsupportedOpError("as_strided: input layout unknown")
    x_stride, x_offset = layout
    size = tuple(int(n) for n in call.arg(1, "size"))
    stride = tuple(int(s) for s in call.arg(2, "stride"))
    offset = call.arg(3, "storage_offset")
    delta = (x_offset if offset is None else int(offset)) - x_offset
    if any(s < 0 for s in stride) or 0 in size:
        raise UnsupportedOpError("as_strided with negative strides or an empty size")
    affine = strided_map_affine(x.shape, x_stride, delta, size, stride)
    if affine is None:
        return (_gather_view(x, x_stride, delta, size, stride),)
    coords, match = affine

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(
            IntLit(c) if m is None else iadd_const_last(idx[m], c)
            for c, m in zip(coords, match, strict=True)
        )

    return (x.view(size, index_map),)
