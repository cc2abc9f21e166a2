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
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.frontends.jaxfe.core import EqnOperand, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import Nest, UnsupportedOpError, nest
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
    (j,) = kb.fresh_vars(1, "j")
    i = rows.idx[d]
    assert isinstance(i, Name)
    other = [*rows.idx[:d], j, *rows.idx[d + 1:]]
    rank = kb.local(DType.I64, shape, SORT_RANK)
    at = rank[tuple(rows.idx)]

    def count(later: bool, a: Sequence[Expr], b: Sequence[Expr]) -> Stmt:
        """``rank += 1`` for each ``j`` after (``later``) or before ``i`` with
        key(a) < key(b)."""
        order = Binary(">" if later else "<", j, i)
        less = _lexicographic_less([read(o, a) for o in ops[:num_keys]],
                                   [read(o, b) for o in ops[:num_keys]])
        one = Call("select", (less, IntLit(1), IntLit(0)))
        step = Reduce(at, "+", one if later else Binary("-", IntLit(0), one))
        (loop,) = nest([(j, shape[d])], [If(order, (step,))])
        return loop

    idx_i, idx_j = list(rows.idx), other
    body: list[Stmt] = [Assign(at, i), count(True, idx_j, idx_i), count(False, idx_i, idx_j)]
    for k, o in enumerate(ops):
        out = ctx.out(k)
        place = [*rows.idx[:d], at, *rows.idx[d + 1:]]
        body.append(Assign(Access(out.ref.name, out.storage_index(place)), read(o, rows.idx)))
    kb.emit(*rows.wrap(body))
    return None


def _lexicographic_less(a: Sequence[Expr], b: Sequence[Expr]) -> Expr:
    """``a < b`` over the keys in order (the first that differs decides)."""
    less: Expr = Binary("<", a[-1], b[-1])
    for x, y in zip(reversed(a[:-1]), reversed(b[:-1]), strict=True):
        less = Binary("or", Binary("<", x, y), Binary("and", Binary("==", x, y), less))
    return less
