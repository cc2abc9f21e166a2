"""Reuse facts for the cache-aware bound: contractions and global-reduction re-reads.

Contract: ``(Scope, Sequence[Leaf]) -> list[ContractionInfo] | list[SpillInfo]``,
pure and deterministic. `contractions` lists every contraction node with its point
count and whether the matmul I/O lower bound applies (plain loop-index subscripts,
program inputs in, a program output out). `spills` lists the input tensors that a
global reduction provably forces to be read twice: reduced over all their elements
per output group, then read again by a later consumer of the reduced value.
Conditions and bounds: docs/bounds.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.einsum.cost import contraction_operands
from solar.einsum.count import Count
from solar.einsum.counter import CountContext
from solar.einsum.domain import LoopDim
from solar.einsum.graph import ContractionInfo, SpillInfo
from solar.einsum.leaves import Leaf, Scope
from solar.ir import Access, Assign, Name, Reduce, walk_exprs
from solar.symbolic import SymExpr, product, to_sympy

__all__ = ["contractions", "spills"]

_LOWER_ZERO = Count.of(0, exact=False)


def contractions(
    scope: Scope, leaves: Sequence[Leaf], ctx: CountContext
) -> list[ContractionInfo]:
    """The contraction nodes, each with why the matmul I/O bound applies or not.

    Args:
        scope: the program's declarations.
        leaves: every leaf of the program, in order (node positions index them).
        ctx: the lift's own context: a second one would reuse the deferred-count
            names q0, q1... for different counts, and evaluation would bind one name
            to one of them.

    Returns:
        One entry per contraction node, in node order.
    """
    out = []
    for ni, lf in enumerate(leaves):
        if lf.node.work != "contraction" or lf.stmt is None:
            continue
        pair = contraction_operands(lf.stmt)
        assert pair is not None
        a, b = pair
        c = lf.stmt.target
        vs = lf.node.domain.vars
        decls = [scope.decls[x.tensor] for x in (a, b, c)]
        points = ctx.points(lf.node.domain) if not lf.node.value_guarded else _LOWER_ZERO
        written = lf.node.writes[0][1]
        reason = _pebble_ineligible(a, b, c, vs, [d.role for d in decls], lf.node.value_guarded)
        out.append(ContractionInfo(
            kernel=lf.node.kernel, node=ni, operands=(a.tensor, b.tensor, c.tensor),
            points=points, output_elems=written,
            itemsize_bytes=min(d.dtype.itemsize_bytes for d in decls),
            eligible=reason == "", reason=reason,
        ))
    return out


def _pebble_ineligible(a: Access, b: Access, c: Access, vs: Sequence[str],
                       roles: Sequence[str], value_guarded: bool) -> str:
    """Why the matmul I/O bound does not apply ("" when it does); docs/bounds.md."""
    if value_guarded:
        return "under a value-dependent condition"
    if roles[0] not in ("input", "param") or roles[1] not in ("input", "param"):
        return "an operand is computed on chip (not a program input or parameter)"
    if roles[2] != "output":
        return "the result is not a program output"
    if a.tensor == b.tensor:
        # Smith et al. count the elements of A and of B in a segment apart; one tensor read
        # twice (X @ X.T) serves both from one pool, and a schedule beats their bound
        return "the operands are one tensor (X @ X.T): the bound assumes two"
    va, vb, vc = (_plain_vars(x, vs) for x in (a, b, c))
    if va is None or vb is None or vc is None:
        return "a subscript is not a plain loop index"
    sa, sb, sc = set(va), set(vb), set(vc)
    if (sa | sb | sc) != set(vs):
        return "a loop index appears in no operand"
    i, j, k = (sa & sc) - sb, (sb & sc) - sa, (sa & sb) - sc
    if not (i and j and k):
        return "not matmul-like (needs row, column and contracted indices)"
    if any(len([s for s in (sa, sb, sc) if v in s]) == 1 for v in vs):
        return "an index appears in only one operand"
    return ""


def _plain_vars(access: Access, loop_vars: Sequence[str]) -> list[str] | None:
    names = [i.name for i in access.indices if isinstance(i, Name) and i.name in loop_vars]
    if len(names) != len(access.indices) or len(set(names)) != len(names):
        return None
    return names


def spills(scope: Scope, leaves: Sequence[Leaf]) -> list[SpillInfo]:
    """Provable global-reduction re-reads (Note [Reduction barriers] in docs/bounds.md).

    Args:
        scope: the program's declarations.
        leaves: every leaf of the program, in order.

    Returns:
        At most one re-read per input or parameter tensor.
    """
    out: dict[str, SpillInfo] = {}
    for ri, red in enumerate(leaves):
        st = red.stmt
        n = red.node
        if not isinstance(st, Reduce) or n.value_guarded or n.seq_root is not None:
            continue
        if n.domain.guards:
            continue
        vs = n.domain.vars
        tvars = _plain_vars(st.target, vs)
        if tvars is None:
            continue
        for x in (e for e in walk_exprs(st.value) if isinstance(e, Access)):
            decl = scope.decls[x.tensor]
            xvars = _plain_vars(x, vs)
            if (x.tensor in out or decl.role not in ("input", "param") or xvars is None
                    or set(xvars) != set(vs) or not set(tvars) < set(xvars)):
                continue
            info = _find_consumer(scope, leaves, ri, st.target, x, xvars, tvars)
            if info is not None:
                out[x.tensor] = info
    return list(out.values())


def _find_consumer(scope: Scope, leaves: Sequence[Leaf], ri: int, target: Access,
                   x: Access, xvars: list[str], tvars: list[str]) -> SpillInfo | None:
    red = leaves[ri].node
    extents = {lp.var: _extent(lp) for lp in red.domain.loops}
    if any(e is None for e in extents.values()):
        return None
    group_pos = [xvars.index(v) for v in tvars]
    for ci in range(ri + 1, len(leaves)):
        lf = leaves[ci]
        st, n = lf.stmt, lf.node
        if st is None:
            continue
        if st.target.tensor == target.tensor and isinstance(st, Assign) and not any(
            isinstance(e, Access) and e.tensor == target.tensor for e in walk_exprs(st.value)
        ):
            return None  # the reduced value is overwritten before any consumer
        if n.value_guarded or n.seq_root is not None or n.domain.guards:
            continue
        vs = n.domain.vars
        accs = [e for e in walk_exprs(st.value) if isinstance(e, Access)]
        for y in (a for a in accs if a.tensor == x.tensor):
            yvars = _plain_vars(y, vs)
            if yvars is None:
                continue
            want = [yvars[p] for p in group_pos]
            if not any(_plain_vars(t, vs) == want for t in accs if t.tensor == target.tensor):
                continue
            cext = {lp.var: _extent(lp) for lp in n.domain.loops}
            if any(cext.get(yv) != extents[xv] for yv, xv in zip(yvars, xvars, strict=True)):
                continue
            groups = product(extents[v] for v in tvars)
            group = product(extents[v] for v in xvars if v not in tvars)
            return SpillInfo(x.tensor, ri, ci, Count.of(groups), Count.of(group),
                             scope.decls[x.tensor].dtype.itemsize_bytes)
    return None


def _extent(loop: LoopDim) -> SymExpr | None:
    if loop.step != 1:
        return None
    try:
        lo, hi = to_sympy(loop.lo), to_sympy(loop.hi)
    except ValueError:
        return None
    if any(str(s).startswith("_i_") for s in (lo - hi).free_symbols):
        return None
    return hi - lo
