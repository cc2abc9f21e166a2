"""The scan emitter: an inclusive scan of an operand along one axis, forward or reverse.

Contract: framework-free (no torch, no jax). The most general scan both frameworks have
is ``lax.cumsum``/``cumprod``/``cummax``/``cummin``/``cumlogsumexp`` with ``reverse``
(``torch.cumsum``/``cumprod``/``logcumsumexp``/``cummax``/``cummin`` are the forward
case; cummax/cummin also return the running extreme's index). One kernel: a ``seq``
loop over the scanned axis (outermost, so the other dims vectorise) carrying a
kernel-local running value per row (in f32 for 16/8-bit floats); each step updates the
carry and stores it. The carry lives in a local (registers on a GPU), so the output is
written once and never re-read. Extent-1 dims get the index 0 and no loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit.context import Sink
from solar.frontends.kit.dtypes import accumulate_dtype, cast
from solar.frontends.kit.emit.reduce import Reader
from solar.frontends.kit.index import nest
from solar.ir import Access, Assign, Binary, Call, DType, Expr, IntLit, Name, Stmt, Unary, lit

__all__ = ["SCAN_STEPS", "Step", "emit_scan"]

Step = Callable[[Expr, Expr], Expr]
"""(carry, element) -> the new carry."""


def _logaddexp(a: Expr, b: Expr) -> Expr:
    """``max(a, b) + log1p(exp(-abs(a - b)))`` (7 FLOPs, overflow-free)."""
    gap = Unary("-", Call("abs", (Binary("-", a, b),)))
    return Binary("+", Call("max", (a, b)), Call("log1p", (Call("exp", (gap,)),)))


SCAN_STEPS: dict[str, Step] = {
    "sum": lambda c, v: Binary("+", c, v),
    "prod": lambda c, v: Binary("*", c, v),
    "max": lambda c, v: Call("max", (c, v)),
    "min": lambda c, v: Call("min", (c, v)),
    "logsumexp": _logaddexp,
}
"""The scans both frameworks have, by combine."""

_TIE = {"max": ">=", "min": "<="}
"""The running extreme's index moves on ties (torch's cummax/cummin take the latest)."""


def emit_scan(
    kb: Sink,
    shape: Sequence[int],
    axis: int,
    read: Reader,
    in_dtype: DType,
    write: Callable[[Sequence[Expr]], Access],
    out_dtype: DType,
    combine: str,
    *,
    reverse: bool = False,
    index_write: Callable[[Sequence[Expr]], Access] | None = None,
) -> None:
    """``out[.., t, ..] = x[.., first, ..] combine ... combine x[.., t, ..]`` along ``axis``.

    Args:
        kb: the kernel (or loop body) to emit into.
        shape: the operand's (and output's) shape.
        axis: the scanned dim.
        read: the operand's element at an index.
        in_dtype / out_dtype: the operand's and the output's dtype.
        write: the output's store access at an index.
        combine: a `SCAN_STEPS` key.
        reverse: scan from the last element to the first.
        index_write: for ``max``/``min``, the store access of the running extreme's index.
    """
    step = SCAN_STEPS[combine]
    if not shape:
        kb.emit(Assign(write(()), cast(read(()), in_dtype, out_dtype)))
        if index_write is not None:
            kb.emit(Assign(index_write(()), IntLit(0)))
        return
    n = shape[axis]
    if any(e == 0 for e in shape):
        return
    idx: list[Expr] = []
    rows: list[tuple[Name, int]] = []
    t: Name | None = None
    for k, ext in enumerate(shape):
        if ext == 1:
            idx.append(IntLit(0))
            continue
        (v,) = kb.fresh_vars(1, "i")
        idx.append(v)
        if k == axis:
            t = v
        else:
            rows.append((v, ext))
    dt = accumulate_dtype(out_dtype)
    row_idx = tuple(v for v, _ in rows)
    carry_ref = kb.local(dt, [e for _, e in rows], "carry")
    carry = carry_ref[row_idx] if rows else carry_ref.scalar()
    first = list(idx)
    first[axis] = lit(n - 1) if reverse else IntLit(0)
    at = list(idx)
    if reverse and t is not None:
        at[axis] = Binary("-", lit(n - 1), t)
    elem = cast(read(at), in_dtype, dt)
    init: list[Stmt] = [Assign(carry, cast(read(first), in_dtype, dt)), Assign(write(first), carry)]
    body: list[Stmt] = []
    if index_write is not None:
        pos_ref = kb.local(DType.I64, [e for _, e in rows], "pos")
        pos = pos_ref[row_idx] if rows else pos_ref.scalar()
        init += [Assign(pos, first[axis]), Assign(index_write(first), pos)]
        body += [
            Assign(pos, Call("select", (Binary(_TIE[combine], elem, carry), at[axis], pos))),
            Assign(index_write(at), pos),
        ]
    body += [Assign(carry, step(carry, elem)), Assign(write(at), carry)]
    kb.emit(*nest(rows, init))
    if t is not None:
        kb.emit(*nest([(t, 1, n)], nest(rows, body), seq=True))
