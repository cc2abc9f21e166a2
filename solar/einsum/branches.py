"""Value-dependent branches: the cheapest branch of a ``cond``/``switch`` is charged.

Contract: ``(Scope, Program, CountContext, [KernelCost]) -> [KernelCost]``, the same
list with one kernel of each recognised branch region re-costed (Note [Cheapest branch]).

Note [Cheapest branch]: JAX's ``lax.cond``/``lax.switch`` lowers each branch's kernels
under a value-dependent guard on one scalar ``P``: ``if P <= 0 { ... }`` (branch 0),
``if P == k`` (branch ``k``), ``if P >= n - 1`` (the last; the index is clamped, as
``lax.switch`` does). Under a value-dependent guard a statement may run nowhere, so each
such kernel alone counts 0; but the branches are exhaustive: whatever ``P`` is, exactly
one branch runs. A *branch region* is the set of kernels whose whole body is one such
``if`` on the same ``P`` (structurally equal, reading only tensors no kernel from the
region's first on writes, so ``P`` has one value throughout) with one ``n`` and every
branch ``0 .. n - 1`` present. Its charge is, per quantity, the minimum over branches of
the branch's total (its kernels lifted without the guard): FLOPs per (work class, dtype,
convolution) group, charged reads per tensor (summed over the branch's kernels, as the
unfused model charges each launch), distinct elements read and written per tensor (the
largest of the branch's kernels: a union is at least its largest part). The charge sits
on the region's first kernel; the others keep 0.

Soundness: whichever branch ``b`` runs, it moves and computes at least ``b``'s totals,
which are at least the per-quantity minima; a kernel's time bound is monotone in each
quantity and the bound of one kernel with a branch's summed work is at most the sum of its
kernels' bounds (a maximum of linear terms is subadditive). So the region's charge is at
most the time of any branch. A region with a branch that has no kernel (an identity
branch writing its output in place) charges 0, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TypeAlias

from solar.einsum.cost import is_affine_condition
from solar.einsum.count import Count, DeferredCount
from solar.einsum.counter import CountContext
from solar.einsum.graph import FlopGroup, KernelCost, TensorTraffic, WorkClass
from solar.einsum.leaves import Scope, lift_kernel
from solar.einsum.traffic import kernel_cost
from solar.ir import (
    Access,
    Binary,
    DType,
    Expr,
    If,
    IntLit,
    Kernel,
    Program,
    walk_exprs,
    walk_stmts,
)
from solar.symbolic import smin_all

__all__ = ["charge_cheapest_branches"]

_ZERO = Count.of(0)
_Key: TypeAlias = tuple[WorkClass, DType, bool]


@dataclass(frozen=True, slots=True)
class _Arm:
    """Kernel ``ki`` runs when ``P <= 0`` (``op`` ``<=``), ``P == k`` or ``P >= k``."""

    ki: int
    op: str
    k: int
    body: If


def charge_cheapest_branches(scope: Scope, program: Program, ctx: CountContext,
                             kernels: list[KernelCost]) -> list[KernelCost]:
    """Note [Cheapest branch]: ``kernels`` with each branch region's charge on its first
    kernel (the list is returned unchanged when there is none)."""
    regions: dict[Expr, list[_Arm]] = {}
    for ki, k in enumerate(program.kernels):
        arm = None if k.alias or k.inplace else _arm(ki, k)
        if arm is not None:
            regions.setdefault(arm[0], []).append(arm[1])
    out = list(kernels)
    for pred, arms in regions.items():
        classes = _classes(arms)
        if classes is None or not _stable(pred, program, arms[0].ki):
            continue
        totals = [_branch_cost(scope, program, ctx, arms_b) for arms_b in classes]
        first = kernels[arms[0].ki]
        out[arms[0].ki] = replace(first, flop_groups=_min_flops(totals),
                                  traffic=_min_traffic(totals))
    return out


def _arm(ki: int, k: Kernel) -> tuple[Expr, _Arm] | None:
    if len(k.body) != 1 or not isinstance(k.body[0], If):
        return None
    st = k.body[0]
    c = st.cond
    if not (isinstance(c, Binary) and c.op in ("<=", "==", ">=") and isinstance(c.rhs, IntLit)):
        return None
    if is_affine_condition(c, []) or not any(isinstance(a, Access) for a in walk_exprs(c.lhs)):
        return None
    if c.op == "<=" and c.rhs.value != 0:
        return None
    return c.lhs, _Arm(ki, c.op, c.rhs.value, st)


def _classes(arms: Sequence[_Arm]) -> list[list[_Arm]] | None:
    """The arms of each branch ``0 .. n - 1``, or None unless every branch has one."""
    lasts = {a.k for a in arms if a.op == ">="}
    if len(lasts) != 1:
        return None
    (last,) = lasts
    by: list[list[_Arm]] = [[] for _ in range(last + 1)]
    for a in arms:
        b = 0 if a.op == "<=" else a.k
        if a.op == "==" and not 0 < a.k < last:
            return None
        by[b].append(a)
    return by if all(by) else None


def _stable(pred: Expr, program: Program, start: int) -> bool:
    """No kernel from ``start`` on writes a tensor ``pred`` reads."""
    read = {a.tensor for a in walk_exprs(pred) if isinstance(a, Access)}
    for k in program.kernels[start:]:
        for st, _ in walk_stmts(k.body):
            target = getattr(st, "target", None)
            if isinstance(target, Access) and target.tensor in read:
                return False
    return True


def _branch_cost(scope: Scope, program: Program, ctx: CountContext,
                 arms: Sequence[_Arm]) -> list[KernelCost]:
    out = []
    for a in arms:
        k = replace(program.kernels[a.ki], body=a.body.body)
        out.append(kernel_cost(scope, k, a.ki, lift_kernel(scope, k, ctx)))
    return out


def _min(counts: Sequence[Count]) -> Count:
    deferred: list[DeferredCount] = []
    for c in counts:
        deferred.extend(d for d in c.deferred if d not in deferred)
    return Count(smin_all([c.expr for c in counts]), tuple(deferred), exact=False)


def _min_flops(totals: Sequence[Sequence[KernelCost]]) -> tuple[FlopGroup, ...]:
    per: list[dict[_Key, Count]] = []
    for branch in totals:
        groups: dict[_Key, Count] = {}
        for k in branch:
            for g in k.flop_groups:
                key: _Key = (g.work, g.dtype, g.convolution)
                groups[key] = groups.get(key, _ZERO) + g.flops
        per.append(groups)
    common = [key for key in per[0] if all(key in p for p in per)]
    return tuple(FlopGroup(w, d, c, _min([p[(w, d, c)] for p in per])) for w, d, c in common)


def _min_traffic(totals: Sequence[Sequence[KernelCost]]) -> tuple[TensorTraffic, ...]:
    per: list[dict[str, list[TensorTraffic]]] = []
    for branch in totals:
        by: dict[str, list[TensorTraffic]] = {}
        for k in branch:
            for t in k.traffic:
                by.setdefault(t.tensor, []).append(t)
        per.append(by)
    out = []
    for name, ts in per[0].items():
        if not all(name in p for p in per):
            continue
        lists = [p[name] for p in per]
        out.append(TensorTraffic(
            name, ts[0].role, ts[0].dtype,
            _min([Count.total(t.read_elems for t in ls) for ls in lists]),
            _min([Count.max_of([t.written_elems for t in ls]) for ls in lists]),
            _min([Count.max_of([t.raw_read_elems for t in ls]) for ls in lists]),
            None, None,
        ))
    return tuple(out)
