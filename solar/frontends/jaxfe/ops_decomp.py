"""Lowerings of dense linear-algebra primitives: ``cholesky``, ``triangular_solve``, ``lu``.

Contract: ``EqnCtx -> None``; each equation emits one kernel holding the textbook
unblocked algorithm as ``seq`` loops over the pivot/row index (loop bounds depend on it,
so the counts are the exact triangular sums), per batch element:

* ``cholesky``: column by column, ``L[j, j] = sqrt(A[j, j] - sum_k<j L[j, k]^2)`` and
  ``L[i, j] = (A[i, j] - sum_k<j L[i, k] L[j, k]) / L[j, j]`` (``n^3 / 3`` FLOPs); the
  strict upper triangle is written 0 (``jnp.linalg.cholesky`` masks it anyway).
* ``triangular_solve``: forward or backward substitution, one row of the unknown at a
  time, for every right-hand side (``n^2`` FLOPs per column); ``transpose_a`` and
  ``left_side=False`` only change which element of ``a`` is read.
* ``lu``: LAPACK ``getrf`` with partial pivoting: per column, the first row of largest
  magnitude (a ``seq`` running maximum; its value-dependent updates count 0, the
  compares count), a row swap through indirect subscripts, scaling and the rank-1
  update (``2 n^3 / 3``).

XLA runs these as library calls (cuSOLVER/cuBLAS on GPU) whose blocked algorithms do
the same multiply-adds, so the FLOP counts are the classic ones. ``custom_linear_solve``
(``jnp.linalg.solve``) is not lowered here: the driver inlines its ``solve`` jaxpr
(`solar.frontends.jaxfe.walk.inline_body`), which is made of these primitives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from solar.frontends.jaxfe.core import read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx
from solar.frontends.kit import Nest, TensorInfo, UnsupportedOpError, accumulate_dtype, iadd
from solar.ir import (
    Access,
    Assign,
    Binary,
    Call,
    Cast,
    DType,
    Expr,
    For,
    If,
    IntLit,
    Name,
    Reduce,
    Stmt,
    lit,
)

__all__: list[str] = []


def _for(
    var: Name, lo: Expr | int, hi: Expr | int, body: Sequence[Stmt], *, seq: bool = False
) -> For:
    lo_e = lit(lo) if isinstance(lo, int) else lo
    hi_e = lit(hi) if isinstance(hi, int) else hi
    return For(var.name, lo_e, hi_e, tuple(body), seq=seq)


def _write(t: TensorInfo, idx: Sequence[Expr]) -> Access:
    return Access(t.ref.name, t.storage_index(idx))


def _float_in(ctx: EqnCtx, k: int) -> TensorInfo:
    x = ctx.tensor_in(k)
    if not x.dtype.is_float:
        raise UnsupportedOpError(f"{ctx.prim} of dtype {x.dtype}")
    return x


@LOWERINGS.register("cholesky")
def _cholesky(ctx: EqnCtx) -> None:
    a = _float_in(ctx, 0)
    n = a.shape[-1]
    batch = a.shape[:-2]
    out = ctx.out(0)
    kb = ctx.kernel()
    bn = Nest(kb, batch, "b")
    if bn.empty or n == 0:
        return
    j, i, k, r = kb.fresh_vars(4, "j")
    s_t = kb.local(accumulate_dtype(a.dtype), [*batch, n], "s")
    b_idx = list(bn.idx)

    def s(row: Expr) -> Access:
        return s_t[(*b_idx, row)]

    def aa(row: Expr, col: Expr) -> Expr:
        return read(a, [*b_idx, row, col])

    def ll(row: Expr, col: Expr) -> Access:
        return _write(out, [*b_idx, row, col])

    step: list[Stmt] = [
        _for(
            i,
            j,
            n,
            [
                Assign(s(i), lit(0.0)),
                _for(k, 0, j, [Reduce(s(i), "+", Binary("*", ll(i, k), ll(j, k)))]),
            ],
        ),
        Assign(ll(j, j), Call("sqrt", (Binary("-", aa(j, j), s(j)),))),
        _for(
            i,
            iadd(j, 1),
            n,
            [
                Assign(ll(i, j), Binary("/", Binary("-", aa(i, j), s(i)), ll(j, j))),
            ],
        ),
        _for(r, 0, j, [Assign(ll(r, j), lit(0.0))]),
    ]
    kb.emit(*bn.wrap([_for(j, 0, n, step, seq=True)]))


@LOWERINGS.register("triangular_solve")
def _triangular_solve(ctx: EqnCtx) -> None:
    a, b = _float_in(ctx, 0), _float_in(ctx, 1)
    p = ctx.params
    left = bool(p["left_side"])
    lower = bool(p["lower"]) != bool(p["transpose_a"])  # is op(a) lower?
    unit = bool(p["unit_diagonal"])
    m = a.shape[-1]
    batch = b.shape[:-2]
    if a.shape[:-2] != batch:
        raise UnsupportedOpError("triangular_solve with broadcast batch dimensions")
    nrhs = b.shape[-1] if left else b.shape[-2]
    out = ctx.out(0)
    kb = ctx.kernel()
    bn = Nest(kb, batch, "b")
    if bn.empty or m == 0 or nrhs == 0:
        return
    # The system solved, whatever the flags: sum_k M[i, k] y[k, c] = rhs[i, c], where
    # M = op(a) (left) or op(a)^T (right: x op(a) = b is op(a)^T x^T = b^T).
    forward = lower if left else not lower
    transpose = bool(p["transpose_a"]) != (not left)
    t, c, k = kb.fresh_vars(3, "t")
    b_idx = list(bn.idx)
    s_t = kb.local(accumulate_dtype(b.dtype), [*batch, nrhs], "s")
    row: Expr = t if forward else Binary("-", lit(m - 1), t)

    def mat(r: Expr, q: Expr) -> Expr:
        return read(a, [*b_idx, q, r] if transpose else [*b_idx, r, q])

    def at(r: Expr, q: Expr) -> list[Expr]:
        return [*b_idx, r, q] if left else [*b_idx, q, r]

    s = s_t[(*b_idx, c)]
    lo, hi = (IntLit(0), t) if forward else (Binary("-", lit(m), t), lit(m))
    value: Expr = Binary("-", read(b, at(row, c)), s)
    if not unit:
        value = Binary("/", value, mat(row, row))
    body: list[Stmt] = [
        _for(
            c,
            0,
            nrhs,
            [
                Assign(s, lit(0.0)),
                _for(k, lo, hi, [Reduce(s, "+", Binary("*", mat(row, k), read(out, at(k, c))))]),
                Assign(_write(out, at(row, c)), value),
            ],
        ),
    ]
    kb.emit(*bn.wrap([_for(t, 0, m, body, seq=True)]))


@LOWERINGS.register("lu")
def _lu(ctx: EqnCtx) -> None:
    a = _float_in(ctx, 0)
    m, n = a.shape[-2], a.shape[-1]
    batch = a.shape[:-2]
    kdim = min(m, n)
    lu, piv, perm = ctx.out(0), ctx.out(1), ctx.out(2)
    kb = ctx.kernel()
    bn = Nest(kb, batch, "b")
    if bn.empty or m == 0 or n == 0:
        return
    b_idx = list(bn.idx)
    i, c, j, r, q = kb.fresh_vars(5, "i")
    mx_t = kb.local(a.dtype, list(batch), "mx")
    p_t = kb.local(DType.I64, list(batch), "p")
    row_t = kb.local(a.dtype, [*batch, n], "row")
    pt_t = kb.local(perm.dtype, list(batch), "pt")
    mx, pv, pt = mx_t[tuple(b_idx)], p_t[tuple(b_idx)], pt_t[tuple(b_idx)]

    def el(x: TensorInfo, *idx: Expr) -> Access:
        return _write(x, [*b_idx, *idx])

    mag = Call("abs", (el(lu, r, j),))
    step: list[Stmt] = [
        # idamax: a running maximum (strict `>`: the first row of largest magnitude wins).
        Assign(mx, lit(-math.inf)),
        Assign(pv, j),
        _for(r, j, m, [If(Binary(">", mag, mx), (Assign(mx, mag), Assign(pv, r)))], seq=True),
        Assign(el(piv, j), Cast(piv.dtype, pv)),
        _for(c, 0, n, [Assign(row_t[(*b_idx, c)], el(lu, j, c))]),
        _for(c, 0, n, [Assign(el(lu, j, c), el(lu, pv, c))]),
        _for(c, 0, n, [Assign(el(lu, pv, c), row_t[(*b_idx, c)])]),
        Assign(pt, el(perm, j)),
        Assign(el(perm, j), el(perm, pv)),
        Assign(el(perm, pv), pt),
        _for(q, iadd(j, 1), m, [Assign(el(lu, q, j), Binary("/", el(lu, q, j), el(lu, j, j)))]),
        _for(
            q,
            iadd(j, 1),
            m,
            [
                _for(
                    c,
                    iadd(j, 1),
                    n,
                    [
                        Assign(
                            el(lu, q, c),
                            Binary("-", el(lu, q, c), Binary("*", el(lu, q, j), el(lu, j, c))),
                        )
                    ],
                )
            ],
        ),
    ]
    kb.emit(
        *bn.wrap(
            [
                _for(i, 0, m, [_for(c, 0, n, [Assign(el(lu, i, c), read(a, [*b_idx, i, c]))])]),
                _for(i, 0, m, [Assign(el(perm, i), Cast(perm.dtype, i))]),
                _for(j, 0, kdim, step, seq=True),
            ]
        )
    )
