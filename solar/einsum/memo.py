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
    map_expr,
    walk_exprs,
    walk_stmts,
)
from solar.ir.structure import StructuralKey
from solar.ir.structure import structural_key as kernel_key

__all__ = ["KernelMemo"]

_Rows = tuple[tuple[str, Count, str], ...]


@dataclasses.dataclass
class KernelMemo:
    """`lift_kernel` results by kernel structure, for one lift (Note [Identical kernels])."""

    _seen: dict[StructuralKey, tuple[tuple[str, ...], list[Leaf], bool]] = dataclasses.field(
        default_factory=dict
    )

    def lift(self, scope: Scope, kernel: Kernel, ctx: CountContext) -> list[Leaf]:
        """``lift_kernel(scope, kernel, ctx)``, reusing an identical kernel's leaves."""
        key, names = structural_key(scope, kernel)
        hit = self._seen.get(key)
        if hit is None:
            leaves = lift_kernel(scope, kernel, ctx)
            self._seen[key] = (names, leaves, any(_gathers(lf) for lf in leaves))
            return leaves
        first_names, first, gathers = hit
        rename = dict(zip(first_names, names, strict=True))
        stmts = [s for s, _ in walk_stmts(kernel.body)]
        return [_renamed(lf, kernel.name, stmts, rename, gathers) for lf in first]


def _gathers(leaf: Leaf) -> bool:
    """Whether a subscript of ``leaf`` reads a tensor (then renaming rewrites subscripts)."""
    indices = [i for o in leaf.node.operands for i in o.indices]
    indices += [i for g in (leaf.reads, leaf.writes) for imgs in g.values() for img in imgs
                for i in img.indices]
    return any(isinstance(x, Access) for i in indices for x in walk_exprs(i))


def structural_key(scope: Scope, kernel: Kernel) -> tuple[StructuralKey, tuple[str, ...]]:
    """The memo key of ``kernel`` and its tensor names in canonical order
    (`solar.ir.structure.structural_key` over the scope's declarations)."""
    return kernel_key(scope.decls, kernel)


def _renamed(leaf: Leaf, kernel: str, stmts: list[Stmt], rename: Mapping[str, str],
             gathers: bool) -> Leaf:
    """``leaf`` of an identical kernel, relabelled for ``kernel`` (Note [Identical kernels]);
    subscripts are rewritten only where one reads a tensor (``gathers``)."""
    node = leaf.node

    def expr(e: Expr) -> Expr:
        if not gathers:
            return e
        return map_expr(e, lambda x: Access(rename[x.tensor], x.indices, x.span)
                        if isinstance(x, Access) else None)

    def image(i: AccessImage) -> AccessImage:
        if not gathers:
            return i
        indices = tuple(expr(x) for x in i.indices)
        if all(a is b for a, b in zip(indices, i.indices, strict=True)):
            return i
        return dataclasses.replace(i, indices=indices)

    def summary(rows: _Rows) -> _Rows:
        return tuple((rename[t], c, f"union:{rename[t]}" if k == f"union:{t}" else k)
                     for t, c, k in rows)

    def images(grouped: dict[str, list[AccessImage]]) -> dict[str, list[AccessImage]]:
        return {rename[t]: [image(i) for i in imgs] for t, imgs in grouped.items()}

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
