"""A kernel's structure up to tensor names: the key under which identical kernels share work.

Contract: ``structural_key(decls, kernel)`` is pure. Two kernels get one key exactly
when they differ only by their name, their spans and a bijection of tensor names that
maps each tensor's declaration in ``decls`` (role, dtype, shape) onto the other's;
the second value lists ``kernel``'s tensor names in canonical order, so that
``zip(names_a, names_b)`` is that bijection. Users: `solar.einsum.memo` (lifting,
Note [Identical kernels]) and `solar.ir.verify` (checking, Note [Verifying identical
kernels]).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import assert_never

from solar.ir.nodes import (
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Reduce,
    Stmt,
    TensorDecl,
    Unary,
)
from solar.ir.traversal import walk_exprs, walk_stmts

__all__ = ["StructuralKey", "kernel_nodes", "node_positions", "structural_key"]

StructuralKey = tuple[Hashable, ...]


def structural_key(
    decls: Mapping[str, TensorDecl], kernel: Kernel
) -> tuple[StructuralKey, tuple[str, ...]]:
    """The key of ``kernel`` and its tensor names in canonical order.

    The body is fingerprinted as nested tuples holding every field of every node but spans
    and tensor names (`tests/einsum/test_memo.py` checks the census of fields); ``decls``
    gives the declarations of the tensors it touches (a name it lacks keys as ``None``).
    """
    order: dict[str, str] = {}
    local_decls = tuple(
        (order.setdefault(t.name, str(len(order))), t.role, t.dtype, t.shape)
        for t in kernel.locals
    )
    body = tuple(_stmt_key(st, order) for st in kernel.body)
    names = tuple(order)
    touched = tuple(
        None if (d := decls.get(n)) is None else (order[n], d.role, d.dtype, d.shape)
        for n in names
    )
    conv = any("conv" in n.lower() for n in (kernel.name, *names))
    flags = (kernel.alias, kernel.inplace, kernel.collective)
    return (flags, local_decls, body, touched, conv), names


def _stmt_key(st: Stmt, order: dict[str, str]) -> Hashable:
    match st:
        case Assign(target=t, value=v):
            return ("=", _expr_key(t, order), _expr_key(v, order))
        case Reduce(target=t, op=op, value=v):
            return ("+=", op, _expr_key(t, order), _expr_key(v, order))
        case For(var=var, lo=lo, hi=hi, body=body, step=step, seq=seq):
            return ("for", var, _expr_key(lo, order), _expr_key(hi, order), step, seq,
                    tuple(_stmt_key(s, order) for s in body))
        case If(cond=c, body=body):
            return ("if", _expr_key(c, order), tuple(_stmt_key(s, order) for s in body))
        case _:
            assert_never(st)


def _expr_key(e: Expr, order: dict[str, str]) -> Hashable:
    match e:
        case Access(tensor=t, indices=idx):
            return ("[", order.setdefault(t, str(len(order))),
                    tuple(_expr_key(i, order) for i in idx))
        case IntLit() | FloatLit() | BoolLit() | Name():
            return e
        case Unary(op=op, operand=o):
            return ("u", op, _expr_key(o, order))
        case Binary(op=op, lhs=a, rhs=b):
            return ("b", op, _expr_key(a, order), _expr_key(b, order))
        case Call(func=f, args=args):
            return ("c", f, tuple(_expr_key(a, order) for a in args))
        case Cast(dtype=dt, operand=o):
            return ("k", dt, _expr_key(o, order))
        case _:
            assert_never(e)


def kernel_nodes(kernel: Kernel) -> tuple[list[Access], list[If]]:
    """The accesses and ifs of ``kernel`` in one fixed order."""
    accs: list[Access] = []
    ifs: list[If] = []
    for st, _ in walk_stmts(kernel.body):
        match st:
            case Assign() | Reduce():
                exprs: tuple[Expr, ...] = (st.target, st.value)
            case For():
                exprs = (st.lo, st.hi)
            case If():
                ifs.append(st)
                exprs = (st.cond,)
            case _:
                assert_never(st)
        accs += [e for x in exprs for e in walk_exprs(x) if isinstance(e, Access)]
    return accs, ifs


def node_positions(
    kernel: Kernel, accs: list[Access], ifs: list[If]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The indices of ``accs`` and ``ifs`` (nodes of ``kernel``) in `kernel_nodes` order."""
    if not accs and not ifs:
        return (), ()
    all_accs, all_ifs = kernel_nodes(kernel)
    acc_at: dict[int, int] = {}
    for i, a in enumerate(all_accs):
        acc_at.setdefault(id(a), i)
    if_at: dict[int, int] = {}
    for i, f in enumerate(all_ifs):
        if_at.setdefault(id(f), i)
    return tuple(acc_at[id(a)] for a in accs), tuple(if_at[id(f)] for f in ifs)
