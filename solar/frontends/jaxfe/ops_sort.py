"""Lowering of ``sort`` (`jax.lax.sort`: several operands, ``num_keys``, ``dimension``).

Contract: ``EqnCtx -> None``; one kernel (or statements of the enclosing scan body):

* along a ``dimension`` of extent 1 (MJX sorts one-element index arrays inside
  ``mjx.step``) the sort is the identity: the outputs are the operands (free views);
* otherwise each position ``i`` gets its place in the stable sort by the first
  ``num_keys`` operands (lexicographic), counted in an ``i64`` kernel-local
  ``sort_rank`` (Note [Sort ranks]), and every operand ``k`` is scattered there:
  ``out_k[.., rank[.., i, ..], ..] = op_k[.., i, ..]``.

Note [Sort ranks]
~~~~~~~~~~~~~~~~~
The stable position of ``i`` is ``#{j : key_j < key_i} + #{j < i : key_j == key_i}``,
which under a total order equals ``i + #{j > i : key_j < key_i} - #{j < i : key_i <
key_j}``. The lowering writes it so: ``rank = i`` (a plain assignment), then the two
counts as reductions into ``rank``. Executed, that is an exact stable sort (``n^2``
comparisons: affine IR has no cheaper one), so validation checks the permutation and
every operand moved by it. Charged, the counts would be ``n^2`` comparisons, far above
what a sort needs, so the bounds see the sort without them
(`solar.frontends.kit.sorting.sorts_as_copies`, applied by the pipeline to the JAX
program it bounds, as `fill_generated` is to random draws; the saved IR keeps them):
``rank = i`` and the scatter remain, so the sort reads each operand once and writes each
output once — the bytes are exact — and counts no FLOPs. Zero is a sound lower bound:
``n - 1`` comparisons bound any comparison sort (its comparison graph must be
connected), but a radix sort compares nothing. NaNs and ``-0.0`` against ``0.0`` are
ordered by `jax.lax.sort`'s total order, not by ``<``: ranks then collide or differ
from XLA's, and validation fails (an unwritten output element, or other values) rather
than passing silently.

``top_k`` (`jax.lax.top_k`, along ``axis``) ranks its operand the same way, descending
(``key_i > key_j`` for ``key_i < key_j``: the stable order XLA's ``top_k`` also returns,
equal values by ascending index), scatters every value and its index into kernel-locals
of the operand's shape (``top_k_sorted``, ``top_k_index``), then copies the first ``k``
positions into its two outputs. Without the rank counts (the bounds' program) that is
the operand read once, ``k`` values and ``k`` indices written per row, 0 FLOPs — what any
top-k must at least move.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.frontends.jaxfe.core import EqnOperand, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import Nest, Sink, UnsupportedOpError, nest
from solar.frontends.kit.sorting import SORT_RANK
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
    Stmt,
)

__all__: list[str] = []


@LOWERINGS.register("sort")
def _sort(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    ops = ctx.ins
    d = int(ctx.params["dimension"])
    num_keys = int(ctx.params.get("num_keys", 1))
    shape = ctx.out_shape(0)
    if not ops or num_keys < 1 or num_keys > len(ops) or not 0 <= d < len(shape):
        raise UnsupportedOpError(f"sort with {len(ops)} operands and num_keys={num_keys}")
    if shape[d] == 1:
        return tuple(ops)  # one element per row: already sorted
    kb = ctx.kernel()
    rows = Nest(kb, shape)
    if rows.empty:
        return None
    at, body = _ranks(kb, rows, d, ops[:num_keys], descending=False)
    for k, o in enumerate(ops):
        out = ctx.out(k)
        place = [*rows.idx[:d], at, *rows.idx[d + 1:]]
        body.append(Assign(Access(out.ref.name, out.storage_index(place)), read(o, rows.idx)))
    kb.emit(*rows.wrap(body))
    return None


def _ranks(
    kb: Sink, rows: Nest, d: int, keys: Sequence[EqnOperand], *, descending: bool
) -> tuple[Access, list[Stmt]]:
    """The ``sort_rank`` local's element at ``rows.idx`` and the statements that count
    it: each position's place along axis ``d`` in the stable sort by ``keys``."""
    (j,) = kb.fresh_vars(1, "j")
    i = rows.idx[d]
    assert isinstance(i, Name)
    other = [*rows.idx[:d], j, *rows.idx[d + 1:]]
    rank = kb.local(DType.I64, rows.extents, SORT_RANK)
    at = rank[tuple(rows.idx)]
    n = rows.extents[d]

    def count(later: bool, a: Sequence[Expr], b: Sequence[Expr]) -> Stmt:
        """``rank += 1`` for each ``j`` after (``later``) or before ``i`` with
        key(a) < key(b) (descending: key(b) < key(a))."""
        order = Binary(">" if later else "<", j, i)
        ka, kb_ = [read(o, a) for o in keys], [read(o, b) for o in keys]
        less = _lexicographic_less(kb_, ka) if descending else _lexicographic_less(ka, kb_)
        one = Call("select", (less, IntLit(1), IntLit(0)))
        step = Reduce(at, "+", one if later else Binary("-", IntLit(0), one))
        (loop,) = nest([(j, n)], [If(order, (step,))])
        return loop

    idx_i = list(rows.idx)
    return at, [Assign(at, i), count(True, other, idx_i), count(False, idx_i, other)]


@LOWERINGS.register("top_k")
def _top_k(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    (x,) = ctx.ins
    shape = tuple(int(e) for e in ctx.eqn.invars[0].aval.shape)
    d = int(ctx.params.get("axis", len(shape) - 1)) % max(len(shape), 1)
    k = int(ctx.params["k"])
    if not shape or shape[d] == 1:
        raise UnsupportedOpError(f"top_k of shape {shape} along axis {d}")
    kb = ctx.kernel()
    rows = Nest(kb, shape)
    if rows.empty:
        return None
    at, body = _ranks(kb, rows, d, (x,), descending=True)
    place = (*rows.idx[:d], at, *rows.idx[d + 1:])
    values = kb.local(ctx.out_dtype(0), shape, "top_k_sorted")
    indices = kb.local(ctx.out_dtype(1), shape, "top_k_index")
    body += [Assign(values[place], read(x, rows.idx)), Assign(indices[place], rows.idx[d])]
    kb.emit(*rows.wrap(body))
    head = Nest(kb, (*shape[:d], k, *shape[d + 1:]))
    copies = [
        Assign(Access(out.ref.name, out.storage_index(head.idx)), local[tuple(head.idx)])
        for out, local in ((ctx.out(0), values), (ctx.out(1), indices))
    ]
    kb.emit(*head.wrap(copies))
    return None


def _lexicographic_less(a: Sequence[Expr], b: Sequence[Expr]) -> Expr:
    """``a < b`` over the keys in order (the first that differs decides)."""
    less: Expr = Binary("<", a[-1], b[-1])
    for x, y in zip(reversed(a[:-1]), reversed(b[:-1]), strict=True):
        less = Binary("or", Binary("<", x, y), Binary("and", Binary("==", x, y), less))
    return less
