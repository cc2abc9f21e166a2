"""Identical kernels lifted once: `lift_kernel` memoised on the kernel's structure.

Contract: ``KernelMemo().lift(scope, kernel, ctx)`` returns exactly what
``lift_kernel(scope, kernel, ctx)`` returns, for one lift (one `Scope`, one
`CountContext`); the memo is a local value of `solar.einsum.lift_to_einsum`, never
global state.

Note [Identical kernels]
    A 96-layer transformer's layers lower to the same kernels under other tensor and
    kernel names. Lifting depends on a kernel only through its structure (statements,
    loop variables, subscripts, constants, guards, flags), the declarations of the tensors
    it touches (dtype, shape, role), and, for the convolution flag, whether ``conv``
    occurs in its text (`solar.einsum.leaves`): the tensor names themselves only label
    the result. So the key is the kernel with its name blanked and its tensors renamed
    ``0, 1, ...`` in a structural order of first appearance, the renamed declarations
    the scope gives those tensors, and whether ``conv`` occurs in a name. Two kernels
    with one key differ by a bijection of tensor names; the first one's leaves, with
    names mapped through it and statements taken from the second kernel, are the
    second one's leaves. Counts hold no tensor name: the `CountContext` sees domains
    whose guards are index-only and subscripts with indirect ones projected away, and
    it memoises by structure, so the skipped lift would have created no new deferred
    count either. Anything else (another constant, guard, dtype or shape) is another key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from solar.einsum.count import Count
from solar.einsum.counter import CountContext
from solar.einsum.graph import NodeAccess
from solar.einsum.image import AccessImage
from solar.einsum.leaves import Leaf, Scope, lift_kernel
from solar.ir import (
    Access,
    Assign,
    Expr,
    If,
    Kernel,
    Reduce,
    Stmt,
    TensorDecl,
    map_expr,
    walk_stmts,
)
from solar.ir.traversal import map_exprs

__all__ = ["KernelMemo"]

_Rows = tuple[tuple[str, Count, str], ...]
_Key = tuple[Kernel, tuple[TensorDecl | None, ...], bool]


@dataclasses.dataclass
class KernelMemo:
    """`lift_kernel` results by kernel structure, for one lift (Note [Identical kernels])."""

    _seen: dict[_Key, tuple[Kernel, tuple[str, ...], list[Leaf]]] = dataclasses.field(
        default_factory=dict
    )

    def lift(self, scope: Scope, kernel: Kernel, ctx: CountContext) -> list[Leaf]:
        """``lift_kernel(scope, kernel, ctx)``, reusing an identical kernel's leaves."""
        key, names = structural_key(scope, kernel)
        hit = self._seen.get(key)
        if hit is None:
            leaves = lift_kernel(scope, kernel, ctx)
            self._seen[key] = (kernel, names, leaves)
            return leaves
        _, first_names, first = hit
        rename = dict(zip(first_names, names, strict=True))
        stmts = [s for s, _ in walk_stmts(kernel.body)]
        return [_renamed(lf, kernel.name, stmts, rename) for lf in first]


def structural_key(scope: Scope, kernel: Kernel) -> tuple[_Key, tuple[str, ...]]:
    """The memo key of ``kernel`` and its tensor names in canonical order."""
    order: dict[str, str] = {}

    def canon(name: str) -> str:
        return order.setdefault(name, str(len(order)))

    def rename(e: Expr) -> Expr | None:
        if isinstance(e, Access):
            return dataclasses.replace(e, tensor=canon(e.tensor))
        return None

    local_decls = tuple(dataclasses.replace(t, name=canon(t.name)) for t in kernel.locals)
    body = tuple(map_exprs(s, lambda e: map_expr(e, rename)) for s in kernel.body)
    shape = dataclasses.replace(kernel, name="", locals=local_decls, body=body)
    names = tuple(order)
    decls = tuple(
        None if (d := scope.decls.get(n)) is None else dataclasses.replace(d, name=order[n])
        for n in names
    )
    conv = any("conv" in n.lower() for n in (kernel.name, *names))
    return (shape, decls, conv), names


def _renamed(leaf: Leaf, kernel: str, stmts: list[Stmt], rename: Mapping[str, str]) -> Leaf:
    """``leaf`` of an identical kernel, relabelled for ``kernel`` (Note [Identical kernels])."""
    node = leaf.node

    def expr(e: Expr) -> Expr:
        return map_expr(e, lambda x: dataclasses.replace(x, tensor=rename[x.tensor])
                        if isinstance(x, Access) else None)

    def summary(rows: _Rows) -> _Rows:
        return tuple((rename[t], c, f"union:{rename[t]}" if k == f"union:{t}" else k)
                     for t, c, k in rows)

    def images(grouped: dict[str, list[AccessImage]]) -> dict[str, list[AccessImage]]:
        return {rename[t]: [dataclasses.replace(i, indices=tuple(expr(x) for x in i.indices))
                            for i in imgs] for t, imgs in grouped.items()}

    stmt = stmts[node.index]
    assert isinstance(stmt, Assign | Reduce | If)
    new = dataclasses.replace(
        node, kernel=kernel,
        combine=stmt.cond if isinstance(stmt, If) else stmt.value,
        operands=tuple(NodeAccess(rename[o.tensor], tuple(expr(i) for i in o.indices), o.mode)
                       for o in node.operands),
        reads=summary(node.reads), writes=summary(node.writes),
    )
    return Leaf(new, None if isinstance(stmt, If) else stmt, images(leaf.reads),
                images(leaf.writes))
