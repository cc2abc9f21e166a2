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

Note [Interior padding]
    With interior padding (``lax.pad``'s third number, the transpose of a strided conv
    or slice) the regions would be strided: the holes between elements interleave with
    the data. The bounds' image analysis cannot prove interleaved strided writes
    disjoint, so it would count their union as its largest member, far below the output
    (48 of 160 bytes for a ``(3, 4)`` input padded ``((1, 2, 1), (0, 1, 0))``). Such a
    pad is emitted as one nest over the output with affine guards instead
    (``if not inside { fill }``, ``if inside { x[(o - lo) // s] }``; no FLOPs, the
    guards split the space), which that analysis counts closer (112 bytes). Without
    interior padding the regions are exact (120 of 120 bytes, where the guarded form
    counts 72), so they stay the rule.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from solar.frontends.kit.context import Sink
from solar.frontends.kit.dtypes import cast
from solar.frontends.kit.emit.reduce import Reader
from solar.frontends.kit.index import Nest, all_of, iadd_const_last, nest, range_guard
from solar.frontends.kit.table import UnsupportedOpError
from solar.ir import Access, Assign, Binary, DType, Expr, If, IntLit, Stmt, Unary, lit

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
    """A range ``[lo, hi)`` of one output dim and its source index (``None``: padding)."""

    lo: int
    hi: int
    src: Callable[[Expr], Expr] | None

    def source(self, v: Expr) -> Expr:
        """The source index at output index ``v`` (border segments always have one).

        Raises:
            UnsupportedOpError: a padding segment (no source).
        """
        if self.src is None:
            raise UnsupportedOpError("a padding segment has no source index")
        return self.src(v)


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
        dims = [(v, s.lo, s.hi) for v, s in zip(idx, combo, strict=True)]
        kb.emit(*nest(dims, [Assign(write(idx), value)]))


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


def _data(n: int, lo: int, size: int) -> Segment:
    """The output positions holding input elements of a dim (``lo`` may be negative)."""
    return Segment(max(lo, 0), min(lo + n, size), shift(-lo))


def _fills(n: int, lo: int, size: int) -> list[Segment]:
    """The fill positions of a dim: left border, right border."""
    return [Segment(0, max(lo, 0), None), Segment(max(lo + n, 0), size, None)]


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
    on their data positions, the dims after it whole), then the data; with interior
    padding, one guarded nest instead (Note [Interior padding]). The border modes take
    non-negative ``lo``/``hi`` and no ``interior``.

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
    if any(c[2] for c in config):
        _emit_guarded(kb, shape, config, read, in_dtype, write, out_dtype, fill)
        return
    sizes = [lo + n + hi for n, (lo, hi, _) in zip(shape, config, strict=True)]
    data = [_data(n, lo, size) for n, (lo, _, _), size in zip(shape, config, sizes, strict=True)]
    rank = len(shape)
    for d in range(rank):
        n, (lo, _, _) = shape[d], config[d]
        for f in _fills(n, lo, sizes[d]):
            if f.hi <= f.lo:
                continue
            segs = [[data[k]] if k < d else [Segment(0, sizes[k], None)] for k in range(rank)]
            segs[d] = [f]
            emit_regions(kb, read, in_dtype, write, out_dtype, segs, fill)
    emit_regions(kb, read, in_dtype, write, out_dtype, [[s] for s in data], fill)


def _emit_guarded(
    kb: Sink,
    shape: Sequence[int],
    config: Sequence[tuple[int, int, int]],
    read: Reader,
    in_dtype: DType,
    write: Writer,
    out_dtype: DType,
    fill: Expr | None,
) -> None:
    """A constant pad with interior padding: one nest over the output, each element the
    source where its position is an element of the dilated input, else ``fill`` (affine
    guards; Note [Interior padding])."""
    if fill is None:
        raise UnsupportedOpError("padding without a fill value")
    out_shape = [
        lo + ((n - 1) * (it + 1) + 1 if n else 0) + hi
        for n, (lo, hi, it) in zip(shape, config, strict=True)
    ]
    loops = Nest(kb, out_shape)
    if loops.empty:
        return
    conds: list[Expr] = []
    src: list[Expr] = []
    for k, (lo, _hi, interior) in enumerate(config):
        a = loops.aff(k).plus(-lo)  # position in the interior-dilated input
        step = interior + 1
        extent = (shape[k] - 1) * step + 1 if shape[k] else 0
        conds += range_guard(a, extent)
        if step > 1:
            conds.append(Binary("==", Binary("%", a.expr(), lit(step)), IntLit(0)))
            src.append(Binary("//", a.expr(), lit(step)))
        else:
            src.append(a.expr())
    tgt = write(loops.idx)
    inside = all_of(conds)
    value = cast(read(src), in_dtype, out_dtype)
    body: list[Stmt] = (
        [Assign(tgt, value)]
        if inside is None
        else [If(Unary("not", inside), (Assign(tgt, fill),)), If(inside, (Assign(tgt, value),))]
    )
    kb.emit(*loops.wrap(body))
