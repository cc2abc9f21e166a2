"""The padding emitter: constant (with negative and interior padding), reflect, replicate
and circular pads, as loop nests over output regions.

Contract: framework-free (no torch, no jax). The most general pad is ``lax.pad``'s
``(lo, hi, interior)`` per dim (negative ``lo``/``hi`` crop, ``interior`` inserts fill
between elements) plus the border modes PyTorch adds (``reflect``, ``replicate``,
``circular``; JAX's ``jnp.pad`` builds those from slices). One kernel whose loop nests
partition the output into regions on which the source index is affine or a strided
position (no ``select``, no guards): a padded dim splits into left border / data /
interior holes / right border, so every output element is written exactly once and no
element outside the source is ever read. `Segment` and `emit_regions` also serve the
other region-partitioned copies (flip, roll: PyTorch's ops_pad.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from solar.frontends.kit.context import Sink
from solar.frontends.kit.dtypes import cast
from solar.frontends.kit.emit.reduce import Reader
from solar.frontends.kit.index import iadd_const_last
from solar.frontends.kit.table import UnsupportedOpError
from solar.ir import Access, Assign, Binary, DType, Expr, For, IntLit, Name, Stmt, Unary, lit

__all__ = [
    "PadMode",
    "Segment",
    "border_segments",
    "emit_pad",
    "emit_regions",
    "identity",
    "mirror",
    "shift",
]

PadMode = Literal["constant", "reflect", "replicate", "circular"]

Writer = Callable[[Sequence[Expr]], Access]
"""The output's store access at an index."""


@dataclass(frozen=True, slots=True)
class Segment:
    """Positions ``lo, lo + step, ... < hi`` of one output dim and their source index
    (``None``: padding)."""

    lo: int
    hi: int
    src: Callable[[Expr], Expr] | None
    step: int = 1


def identity(v: Expr) -> Expr:
    """``v -> v``."""
    return v


def shift(delta: int) -> Callable[[Expr], Expr]:
    """``v -> v + delta``."""
    return lambda v: iadd_const_last(v, delta)


def mirror(at: int) -> Callable[[Expr], Expr]:
    """``v -> at - v``."""
    return lambda v: iadd_const_last(Unary("-", v), at)


def _const(value: int) -> Callable[[Expr], Expr]:
    return lambda _v: IntLit(value)


def _loops(dims: Sequence[tuple[Name, Segment]], body: Sequence[Stmt]) -> list[Stmt]:
    stmts: tuple[Stmt, ...] = tuple(body)
    for v, s in reversed(dims):
        stmts = (For(v.name, lit(s.lo), lit(s.hi), stmts, step=s.step),)
    return list(stmts)


def emit_regions(
    kb: Sink,
    read: Reader,
    in_dtype: DType,
    write: Writer,
    out_dtype: DType,
    segments: Sequence[Sequence[Segment]],
    fill: Expr | None,
) -> None:
    """One loop nest per combination of per-dim segments (empty ranges skipped): the
    source element where every dim has a source, else ``fill``."""
    for combo in itertools.product(*segments):
        if any(s.hi <= s.lo for s in combo):
            continue
        idx = kb.fresh_vars(len(combo), "i")
        srcs = [s.src for s in combo]
        if any(f is None for f in srcs):
            if fill is None:
                raise UnsupportedOpError("padding region without a fill value")
            value = fill
        else:
            src = [f(v) for f, v in zip(srcs, idx, strict=True) if f is not None]
            value = cast(read(src), in_dtype, out_dtype)
        kb.emit(*_loops(list(zip(idx, combo, strict=True)), [Assign(write(idx), value)]))


def border_segments(
    mode: PadMode, shape: Sequence[int], pads: Mapping[int, tuple[int, int]]
) -> list[list[Segment]]:
    """Per dim of the padded output: left border, interior, right border (``reflect``,
    ``replicate`` or ``circular`` sources), for an input of ``shape``."""
    segments: list[list[Segment]] = []
    for d, n in enumerate(shape):
        lo, hi = pads.get(d, (0, 0))
        if (lo, hi) == (0, 0):
            segments.append([Segment(0, n, identity)])
            continue
        if lo < 0 or hi < 0:
            raise UnsupportedOpError(f"{mode} pad with negative padding")
        if mode == "reflect":
            left, right = mirror(lo), mirror(2 * (n - 1) + lo)
        elif mode == "circular":  # wraps around: out[o] = x[(o - lo) mod n]
            if lo > n or hi > n:
                raise UnsupportedOpError("circular pad wider than its dim")
            left, right = shift(n - lo), shift(-lo - n)
        else:
            left, right = _const(0), _const(n - 1)
        segments.append(
            [
                Segment(0, lo, left),
                Segment(lo, lo + n, shift(-lo)),
                Segment(lo + n, lo + n + hi, right),
            ]
        )
    return segments


def _first(lo: int, step: int) -> int:
    """The smallest ``k >= 0`` with ``lo + k * step >= 0``.

    >>> _first(-5, 2), _first(3, 2)
    (3, 0)
    """
    return max(0, -(lo // step))


def _data(n: int, lo: int, step: int, size: int) -> Segment:
    """The output positions holding input elements of a dim: ``lo + k * step``, clipped
    to ``[0, size)``; the source index is ``k``."""
    start = lo + _first(lo, step) * step
    stop = min(lo + (n - 1) * step + 1, size) if n else start
    if step == 1:
        return Segment(start, stop, shift(-lo))
    return Segment(
        start, stop, lambda v: Binary("//", iadd_const_last(v, -lo), IntLit(step)), step
    )


def _fills(n: int, lo: int, step: int, size: int) -> list[Segment]:
    """The fill positions of a dim: left border, the holes between elements, right border."""
    out = [Segment(0, min(max(lo, 0), size), None)]
    for j in range(1, step):  # hole j: lo + k * step + j, k in [0, n - 1)
        k = _first(lo + j, step)
        out.append(Segment(lo + k * step + j, min(lo + (n - 2) * step + j + 1, size), None, step))
    out.append(Segment(max(lo + (n - 1) * step + 1, 0) if n else max(lo, 0), size, None))
    return out


def emit_pad(
    kb: Sink,
    shape: Sequence[int],
    config: Sequence[tuple[int, int, int]],
    read: Reader,
    in_dtype: DType,
    write: Writer,
    out_dtype: DType,
    *,
    mode: PadMode = "constant",
    fill: Expr | None = None,
) -> None:
    """Pad an operand of ``shape`` by ``config[d] = (lo, hi, interior)`` per dim.

    ``constant`` takes any ``lo``/``hi`` (negative crops) and ``interior``, and writes
    ``fill`` at padding positions: first each dim's fill positions (the dims before it
    on their data positions, the dims after it whole), then the data. The border modes
    take non-negative ``lo``/``hi`` and no ``interior``.

    Raises:
        UnsupportedOpError: a border mode with negative or interior padding, a circular
            pad wider than its dim.
    """
    if mode != "constant":
        if any(c[2] for c in config):
            raise UnsupportedOpError(f"{mode} pad with interior padding")
        pads = {d: (c[0], c[1]) for d, c in enumerate(config)}
        segments = border_segments(mode, shape, pads)
        emit_regions(kb, read, in_dtype, write, out_dtype, segments, None)
        return
    sizes = [
        lo + ((n - 1) * (it + 1) + 1 if n else 0) + hi
        for n, (lo, hi, it) in zip(shape, config, strict=True)
    ]
    data = [
        _data(n, lo, it + 1, size)
        for n, (lo, _, it), size in zip(shape, config, sizes, strict=True)
    ]
    rank = len(shape)
    for d in range(rank):
        n, (lo, _, it) = shape[d], config[d]
        for f in _fills(n, lo, it + 1, sizes[d]):
            if f.hi <= f.lo:
                continue
            segs = [[data[k]] if k < d else [Segment(0, sizes[k], None)] for k in range(rank)]
            segs[d] = [f]
            emit_regions(kb, read, in_dtype, write, out_dtype, segs, fill)
    emit_regions(kb, read, in_dtype, write, out_dtype, [[s] for s in data], fill)
