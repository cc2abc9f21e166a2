"""The reduction emitter: one kernel reducing an operand over some of its dims.

Contract: framework-free (no torch, no jax). The most general reduction both frameworks
have is "over any set of axes, with an identity, an element transform, and a final
transform per row": ``out[kept] = finish(op-reduce(value(x[idx])))``. `ReduceRows`
builds its loop nest (one loop per non-trivial dim, its variables numbered in dim
order; kept dims outside, reduced dims inside; extent-1 dims are indexed by the literal
0) and the helpers below emit the reductions the frontends share:

* `emit_reduce`: ``sum``/``mean``/``prod``/``max``/``min``/norms (``aten.sum``,
  ``reduce_sum``...). 16/8-bit float outputs accumulate in an f32 kernel-local (eager
  PyTorch and XLA both do); so does any reduction with a final transform.
* `emit_count_reduce`: ``all``/``any`` (and ``max``/``min`` of bools): count the true
  elements into an i64 local, then compare the count (the IR has no boolean reduction).
* `emit_arg_reduce`: ``argmax``/``argmin`` and ``max.dim``/``min.dim``: the extreme into
  a local, then the first index attaining it, under a value guard (Note [Arg-reduce NaN]).
* `emit_moments`: ``var``/``std`` (and their ``_mean`` forms): mean, then the squared
  deviations, both passes in one kernel.

A frontend adapter turns its op's arguments (ATen overload arguments, jaxpr params) into
the axes, the operand reader and the output access.

Note [Arg-reduce NaN]
    PyTorch and JAX define ``argmax``/``argmin`` (and ``max.dim``'s indices) the same way:
    a NaN is the extreme, so a row holding one returns the index of its first NaN; on
    ties the first index wins. The extreme pass ``m max= x`` propagates a NaN into ``m``
    (which then equals nothing); the index pass takes the first ``r`` with ``x[r] == m``
    or ``x[r] != x[r]``. That pass runs under a value guard: it costs the condition (2
    FLOPs per element: the comparisons; ``or`` is free) and nothing for the guarded
    ``min=``, so with the extreme pass 3 FLOPs per element, at or below the comparator of
    the eager and XLA kernels (compare, NaN test, select of value and index).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit.context import Sink
from solar.frontends.kit.dtypes import accumulate_dtype, cast, reduce_identity, zero
from solar.frontends.kit.index import nest
from solar.frontends.kit.values import shape_numel
from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    DType,
    Expr,
    If,
    IntLit,
    Name,
    Reduce,
    ReduceOp,
    Stmt,
    lit,
)

__all__ = [
    "Reader",
    "ReduceRows",
    "emit_arg_reduce",
    "emit_count_reduce",
    "emit_moments",
    "emit_reduce",
]

Reader = Callable[[Sequence[Expr]], Expr]
"""The operand's element at an index (its own dims), through any view map."""


class ReduceRows:
    """One kernel's loops over an operand of ``shape``: kept dims outside, ``axes`` inside.

    Attributes:
        kb: the kernel (or loop body) emitted into.
        shape: the operand's shape.
        axes: the reduced dims, sorted.
        idx: one index per operand dim (a loop variable, or 0 for an extent-1 dim).
        kept: the kept dims' indices, in dim order.
        count: how many elements one row reduces.
    """

    def __init__(self, kb: Sink, shape: Sequence[int], axes: Sequence[int]) -> None:
        self.kb = kb
        self.shape = tuple(shape)
        self.axes = tuple(sorted(axes))
        self.idx: list[Expr] = []
        self._loops: list[tuple[int, Name, int]] = []
        for k, ext in enumerate(self.shape):
            if ext == 1:
                self.idx.append(IntLit(0))
                continue
            (v,) = kb.fresh_vars(1, "i")
            self.idx.append(v)
            self._loops.append((k, v, ext))
        self.kept = [self.idx[k] for k in range(len(self.shape)) if k not in self.axes]
        self.count = shape_numel([self.shape[k] for k in self.axes])

    @property
    def empty(self) -> bool:
        """True when some kept dim has extent 0 (no output element)."""
        return any(self.shape[k] == 0 for k in range(len(self.shape)) if k not in self.axes)

    def local(self, dtype: DType, hint: str) -> Access:
        """A per-row kernel-local value (shape of the kept dims)."""
        dims = [(k, e) for k, _, e in self._loops if k not in self.axes]
        ref = self.kb.local(dtype, [e for _, e in dims], hint)
        return ref[tuple(self.idx[k] for k, _ in dims)] if dims else ref.scalar()

    def full_local(self, dtype: DType, hint: str) -> Access:
        """A kernel-local buffer over the whole operand (one value per element)."""
        ref = self.kb.local(dtype, [e for _, _, e in self._loops], hint)
        return ref[tuple(v for _, v, _ in self._loops)] if self._loops else ref.scalar()

    def out_index(self, keepdim: bool) -> list[Expr]:
        """The output index of a row: the kept indices, with 0 for each reduced dim when
        the output keeps them (``keepdim``)."""
        if not keepdim:
            return list(self.kept)
        return [IntLit(0) if k in self.axes else self.idx[k] for k in range(len(self.shape))]

    def over_reduced(self, *stmts: Stmt) -> list[Stmt]:
        """``stmts`` inside the reduced dims' loops (as they are when there are none)."""
        if self.count == 0:
            return []
        return nest([(v, e) for k, v, e in self._loops if k in self.axes], stmts)

    def emit(self, body: Sequence[Stmt]) -> None:
        """``body`` inside the kept dims' loops, appended to the kernel."""
        if self.empty:
            return
        self.kb.emit(*nest([(v, e) for k, v, e in self._loops if k not in self.axes], body))

    def position(self) -> Expr:
        """The row-major position of the reduced indices within a row (``0 .. count-1``)."""
        pos: Expr | None = None
        for k in self.axes:
            term = self.idx[k]
            pos = term if pos is None else Binary("+", Binary("*", pos, lit(self.shape[k])), term)
        return pos if pos is not None else IntLit(0)


def emit_reduce(
    rows: ReduceRows,
    target: Access,
    op: ReduceOp,
    out_dtype: DType,
    value: Callable[[DType], Expr],
    *,
    finish: Callable[[Expr, int], Expr] | None = None,
    identity: Expr | None = None,
) -> None:
    """``target = finish(identity op value(acc) op ...)`` over each row.

    Args:
        rows: the loop nest.
        target: the output's store access for the row (`ReduceRows.out_index`).
        op: the combine op.
        out_dtype: the output's dtype; the accumulator is `accumulate_dtype` of it.
        value: the element to combine, given the accumulator dtype (the reader's value,
            cast or transformed).
        finish: the final transform of the accumulator and the row count (mean's
            division); forces a kernel-local accumulator.
        identity: the start value (default: the identity of ``op``).
    """
    acc_dt = accumulate_dtype(out_dtype)
    tgt = target
    use_local = acc_dt != out_dtype or finish is not None
    acc = rows.local(acc_dt, "acc") if use_local else tgt
    init = identity if identity is not None else reduce_identity(op, acc_dt)
    body: list[Stmt] = [Assign(acc, init), *rows.over_reduced(Reduce(acc, op, value(acc_dt)))]
    if use_local:
        body.append(Assign(tgt, finish(acc, rows.count) if finish is not None else acc))
    rows.emit(body)


def emit_count_reduce(rows: ReduceRows, target: Access, truth: Expr, *, every: bool) -> None:
    """``all`` (``every``) or ``any`` of ``truth`` (a bool per element) over each row:
    count the true elements into an i64 local (1 FLOP each), then compare the count."""
    cnt = rows.local(DType.I64, "count")
    test = Binary("==", cnt, lit(rows.count)) if every else Binary(">", cnt, IntLit(0))
    rows.emit(
        [
            Assign(cnt, IntLit(0)),
            *rows.over_reduced(Reduce(cnt, "+", cast(truth, DType.BOOL, DType.I64))),
            Assign(target, test),
        ]
    )


def emit_arg_reduce(
    rows: ReduceRows,
    read: Reader,
    dtype: DType,
    op: ReduceOp,
    *,
    values: Access | None,
    indices: Access | None,
) -> None:
    """The extreme of each row (into ``values``) and the first index attaining it (into
    ``indices``, the row-major position over the reduced dims); a NaN is the extreme
    (Note [Arg-reduce NaN]). Bools compare as 0/1 integers (``max=`` is not defined on
    bools)."""
    vdt = DType.I32 if dtype == DType.BOOL else dtype

    def element() -> Expr:
        return cast(read(rows.idx), dtype, vdt)

    best = rows.local(vdt, "best")
    body: list[Stmt] = [
        Assign(best, reduce_identity(op, vdt)),
        *rows.over_reduced(Reduce(best, op, element())),
    ]
    if values is not None:
        body.append(Assign(values, cast(best, vdt, dtype)))
    if indices is not None:
        tgt = indices
        hit: Expr = Binary("==", element(), best)
        if vdt.is_float:
            hit = Binary("or", hit, Binary("!=", element(), element()))
        body += [
            Assign(tgt, lit(max(rows.count - 1, 0))),
            *rows.over_reduced(If(hit, (Reduce(tgt, "min", rows.position()),))),
        ]
    rows.emit(body)


def emit_moments(
    rows: ReduceRows,
    read: Reader,
    dtype: DType,
    out_dtype: DType,
    *,
    correction: float,
    root: bool,
    target: Access,
    mean_target: Access | None = None,
) -> None:
    """``var`` (``std`` if ``root``) of each row with ``correction`` subtracted from the
    count, and optionally its mean: the mean pass, then the squared deviations (each
    deviation computed once, into a kernel-local the size of the operand)."""
    dt = accumulate_dtype(out_dtype)
    mean, m2 = rows.local(dt, "mean"), rows.local(dt, "m2")
    dev = rows.full_local(dt, "dev")

    def element() -> Expr:
        return cast(read(rows.idx), dtype, dt)

    var = Binary("/", m2, lit(float(max(rows.count - correction, 0.0))))
    body: list[Stmt] = [
        Assign(mean, zero(dt)),
        *rows.over_reduced(Reduce(mean, "+", element())),
        Assign(mean, Binary("/", mean, lit(float(rows.count)))),
        Assign(m2, zero(dt)),
        *rows.over_reduced(
            Assign(dev, Binary("-", element(), mean)), Reduce(m2, "+", Binary("*", dev, dev))
        ),
        Assign(target, Call("sqrt", (var,)) if root else var),
    ]
    if mean_target is not None:
        body.append(Assign(mean_target, mean))
    rows.emit(body)
