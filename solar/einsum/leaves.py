"""Leaves: each leaf statement of a kernel lifted to an `EinsumNode` with its access images.

Contract: ``(Scope, Kernel, CountContext) -> list[Leaf]``, in statement order. Each
``Assign``/``Reduce`` becomes an ``assign``/``reduce`` node and each ``if`` on a
value-dependent (non-affine) condition a ``guard`` node. Affine ``if`` conditions
become domain guards; under a value-dependent one the node is ``value_guarded`` and
its counts are zero as lower bounds. The leaf keeps per-tensor access images for
the kernel's traffic (`solar.einsum.traffic`) and its statement for the reuse
analyses (`solar.einsum.reuse`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from solar.einsum.cost import ReadSite, analyse_value, contraction_operands, is_affine_condition
from solar.einsum.count import Count
from solar.einsum.counter import CountContext
from solar.einsum.domain import Domain, LoopDim, expr_vars, split_conjuncts
from solar.einsum.graph import EinsumNode, NodeAccess, WorkClass
from solar.einsum.image import AccessImage, access_image, union_images
from solar.ir import (
    Access,
    Assign,
    Binary,
    DType,
    Expr,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    TensorDecl,
    walk_exprs,
    walk_stmts,
)

__all__ = ["Leaf", "Scope", "is_window_sum", "lift_kernel"]

_LOWER_ZERO = Count.of(0, exact=False)


@dataclass(frozen=True, slots=True)
class Scope:
    """The program with its declarations indexed by name (locals included).

    Attributes:
        program: the program being lifted.
        decls: every tensor declaration by name, kernel locals included.
        order: the position of each program-level tensor in the declarations.
    """

    program: Program
    decls: Mapping[str, TensorDecl]
    order: Mapping[str, int]

    @staticmethod
    def of(program: Program) -> Scope:
        """Index the declarations of ``program``."""
        decls = {t.name: t for k in program.kernels for t in k.locals}
        decls.update((t.name, t) for t in program.tensors)
        return Scope(program, decls, {t.name: i for i, t in enumerate(program.tensors)})


@dataclass(frozen=True, slots=True)
class Leaf:
    """A lifted node with what later passes need from its statement.

    Attributes:
        node: the einsum node.
        stmt: the statement it came from (None for a guard node).
        reads: the images of the reads, by tensor.
        writes: the image of the write, by tensor (empty for a guard node).
    """

    node: EinsumNode
    stmt: Assign | Reduce | None
    reads: dict[str, list[AccessImage]]
    writes: dict[str, list[AccessImage]]


def lift_kernel(scope: Scope, kernel: Kernel, ctx: CountContext) -> list[Leaf]:
    """Lift each leaf statement of ``kernel`` (and each value-dependent ``if``), in order.

    Args:
        scope: the program's declarations.
        kernel: the kernel to lift.
        ctx: the lift's counting context, shared by every kernel.

    Returns:
        One leaf per ``Assign``/``Reduce`` and per ``if`` on a non-affine condition.
    """
    out: list[Leaf] = []
    position: dict[int, int] = {}
    written = frozenset(s.target.tensor for s, _ in walk_stmts(kernel.body)
                        if isinstance(s, Assign | Reduce))
    for index, (stmt, enclosing) in enumerate(walk_stmts(kernel.body)):
        position[id(stmt)] = index
        loops = [c for c in enclosing if isinstance(c, For)]
        lv = [lp.var for lp in loops]
        guards: list[Expr] = []
        value_guarded = False
        for c in enclosing:
            if isinstance(c, If):
                if is_affine_condition(c.cond, lv):
                    guards.extend(split_conjuncts(c.cond))
                else:
                    value_guarded = True
        seq = [position[id(c)] for c in enclosing if isinstance(c, For) and c.seq]
        domain = Domain(tuple(LoopDim(lp.var, lp.lo, lp.hi, lp.step) for lp in loops),
                        tuple(guards))
        common = (kernel.name, index, domain, value_guarded, seq[0] if seq else None)
        if isinstance(stmt, If) and not is_affine_condition(stmt.cond, lv):
            out.append(_guard_node(scope, ctx, stmt, common))
        elif isinstance(stmt, Assign | Reduce):
            rep = _repeated_vars(stmt, loops, guards, written)
            out.append(_leaf_node(scope, ctx, stmt, common, rep))
    return out


_Common = tuple[str, int, Domain, bool, int | None]


def _guard_node(scope: Scope, ctx: CountContext, stmt: If, common: _Common) -> Leaf:
    kernel, index, domain, value_guarded, seq_root = common
    terms, reads = analyse_value(stmt.cond, domain.vars)
    grouped = _by_tensor(scope, ctx, domain, reads, value_guarded)
    dtype = scope.decls[reads[0].access.tensor].dtype if reads else DType.F32
    node = EinsumNode(
        kernel=kernel, index=index, kind="guard", domain=domain, value_guarded=value_guarded,
        seq_root=seq_root, operands=_operands(reads, None), combine=stmt.cond, reduce_op=None,
        flops=_flops(ctx, domain, [(t.flops, t.guards) for t in terms], value_guarded),
        work="vector", dtype=dtype if dtype.is_float else DType.F32, convolution=False,
        reads=_summary(grouped), writes=(),
    )
    return Leaf(node, None, grouped, {})


def _repeated_vars(stmt: Assign | Reduce, loops: Sequence[For], guards: Sequence[Expr],
                   written: frozenset[str]) -> frozenset[str]:
    """Note [Repeated work]: the plain loops over which ``stmt`` computes one value again
    and again (``Y[i, n] += X[0, k] * W[k, n]``: ``i``).

    Such a loop variable is a whole subscript of the target and appears nowhere else: not
    in the value, another subscript, a guard or a loop bound. The value then reads the
    same elements at every ``i``, and they hold the same values when the kernel writes
    none of the tensors it reads (the target of a ``+=`` aside): one computation serves
    every ``i``, and its result is only written many times.
    """
    lv = [lp.var for lp in loops]
    reads = [e for e in walk_exprs(stmt.value) if isinstance(e, Access)]
    if any(a.tensor in written and not (isinstance(stmt, Reduce) and a == stmt.target)
           for a in reads):
        return frozenset()
    whole = {i.name for i in stmt.target.indices if isinstance(i, Name)}
    used = set(expr_vars(stmt.value, lv))
    used.update(v for i in stmt.target.indices if not isinstance(i, Name)
                for v in expr_vars(i, lv))
    used.update(v for g in guards for v in expr_vars(g, lv))
    used.update(v for lp in loops for b in (lp.lo, lp.hi) for v in expr_vars(b, lv))
    names = [i.name for i in stmt.target.indices if isinstance(i, Name)]
    return frozenset(lp.var for lp in loops if not lp.seq and lp.var in whole
                     and lp.var not in used and names.count(lp.var) == 1)


def _leaf_node(
    scope: Scope, ctx: CountContext, stmt: Assign | Reduce, common: _Common,
    repeated: frozenset[str] = frozenset(),
) -> Leaf:
    kernel, index, domain, value_guarded, seq_root = common
    terms, reads = analyse_value(stmt.value, domain.vars)
    reads += [ReadSite(e, ()) for i in stmt.target.indices for e in walk_exprs(i)
              if isinstance(e, Access)]
    flop_terms = [(t.flops, t.guards) for t in terms]
    if isinstance(stmt, Reduce):
        flop_terms.append((1, ()))
        reads.append(ReadSite(stmt.target, ()))
    work: WorkClass = "vector"
    dtype = scope.decls[stmt.target.tensor].dtype
    conv = False
    pair = contraction_operands(stmt)
    if pair is not None:
        work = "contraction"
        da, db = (scope.decls[a.tensor].dtype for a in pair)
        dtype = min((da, db), key=lambda d: d.itemsize_bytes)
        # Window sums (h*s + r) mark a convolution; so does the kernel's name, because a
        # 1x1 convolution has no window yet still runs as one (cuDNN, TF32 allowed).
        conv = any(is_window_sum(i, domain) for a in pair for i in a.indices) or (
            "conv" in str(kernel).lower()
        )
    written = {stmt.target.tensor: [
        AccessImage.unexecuted() if value_guarded
        else access_image(ctx, domain, stmt.target, scope.decls.get(stmt.target.tensor))
    ]}
    grouped = _by_tensor(scope, ctx, domain, reads, value_guarded)
    flops = _flops(ctx, domain.without(repeated), flop_terms, value_guarded)
    node = EinsumNode(
        kernel=kernel, index=index, kind="reduce" if isinstance(stmt, Reduce) else "assign",
        domain=domain, value_guarded=value_guarded, seq_root=seq_root,
        operands=_operands([r for r in reads if r.access is not stmt.target], stmt.target),
        combine=stmt.value, reduce_op=stmt.op if isinstance(stmt, Reduce) else None,
        flops=flops, work=work, dtype=dtype, convolution=conv, reads=_summary(grouped),
        writes=_summary(written),
        repeated_flops=_flops(ctx, domain, flop_terms, value_guarded) - flops if repeated
        else Count.of(0),
    )
    return Leaf(node, stmt, grouped, written)


def _by_tensor(
    scope: Scope, ctx: CountContext, domain: Domain, sites: Sequence[ReadSite], skip: bool
) -> dict[str, list[AccessImage]]:
    grouped: dict[str, list[AccessImage]] = {}
    for site in sites:
        if skip:
            img = AccessImage.unexecuted()
        else:
            img = access_image(ctx, domain.with_guards(site.guards), site.access,
                               scope.decls.get(site.access.tensor))
        grouped.setdefault(site.access.tensor, []).append(img)
    return grouped


def _summary(grouped: dict[str, list[AccessImage]]) -> tuple[tuple[str, Count, str], ...]:
    out = []
    for tensor, items in grouped.items():
        count, img = union_images(items)
        out.append((tensor, count, img.key if img is not None else f"union:{tensor}"))
    return tuple(out)


def _flops(ctx: CountContext, domain: Domain, terms: Sequence[tuple[int, tuple[Expr, ...]]],
           skip: bool) -> Count:
    if skip:
        return _LOWER_ZERO
    return Count.total(ctx.points(domain.with_guards(guards)) * flops for flops, guards in terms)


def _operands(reads: Sequence[ReadSite], target: Access | None) -> tuple[NodeAccess, ...]:
    seen: list[NodeAccess] = []
    for r in reads:
        op = NodeAccess(r.access.tensor, r.access.indices, "read")
        if op not in seen:
            seen.append(op)
    if target is not None:
        seen.append(NodeAccess(target.tensor, target.indices, "write"))
    return tuple(seen)


def is_window_sum(index: Expr, domain: Domain) -> bool:
    """Whether a subscript sums two or more loop variables as a sliding window does.

    ``oh*s + kh`` (a convolution's window) is one; ``h*Dh + d`` with ``d`` in ``0 .. Dh``
    (a flattened pair of dims: heads split from a packed projection, ``b*SEQ + i``) is not,
    since every ``(h, d)`` names a distinct element, nor is a nested linearisation
    (``(b*H + h)*Dh + d``) or a ``//`` or ``%`` digit of one (packed-qkv attention: its
    twin matmuls got TF32 and 3xTF32). Anything else with two loop variables counts as a
    window: the convolution flag only lets TF32 charge the work, the faster
    rate, so doubt keeps the bound lower.

    >>> from solar.ir import parse_expr
    >>> from solar.einsum.domain import LoopDim
    >>> dom = Domain((LoopDim("h", IntLit(0), Name("H")), LoopDim("d", IntLit(0), Name("D")),
    ...               LoopDim("r", IntLit(0), IntLit(3))))
    >>> is_window_sum(parse_expr("h * D + d + 64"), dom)
    False
    >>> is_window_sum(parse_expr("2 * h + r"), dom)
    True
    >>> is_window_sum(parse_expr("(h * D + d) // 64"), dom), is_window_sum(
    ...     parse_expr("(2 * h + r) % 4"), dom)
    (False, True)
    >>> is_window_sum(parse_expr("((h * D + d) * 3 + r) % 64"), dom)
    False
    >>> tri = Domain((LoopDim("i", IntLit(0), Name("S")),
    ...               LoopDim("j", IntLit(0), parse_expr("i + 1"))))
    >>> is_window_sum(parse_expr("b * S + j"), Domain((LoopDim("b", IntLit(0), Name("B")),
    ...                                               *tri.loops)))
    False
    """
    if len(expr_vars(index, domain.vars)) < 2:
        return False
    if isinstance(index, Binary) and index.op in ("//", "%") and not expr_vars(
            index.rhs, domain.vars):
        # a digit of a flattened index (packed q/k/v heads, ``(h*D + d) // 64``) is a
        # window exactly when the flattened index is one
        return is_window_sum(index.lhs, domain)
    loops = {loop.var: loop for loop in domain.loops}
    return not _linearised(index, loops)


def _linearised(index: Expr, loops: Mapping[str, LoopDim]) -> bool:
    """Whether ``index`` is a mixed-radix linearisation of distinct loop variables, up to a
    constant offset: one variable (times a loop-free factor), or ``X * c + v`` with ``v``
    in ``0 .. c`` (or fewer) and ``X`` such a linearisation of other variables, nested as
    ``((b * H + h) * Dh + d)``. Every point then names a distinct element."""
    terms: list[Expr] = []
    if not _sum_terms(index, terms):
        return False
    terms = [t for t in terms if expr_vars(t, loops)]
    if len(terms) == 1:
        var, _ = _scaled_var(terms[0], loops)
        if var is not None:
            return True
        outer, _ = _scaled(terms[0], loops)
        return outer is not None and _linearised(outer, loops)
    if len(terms) != 2:
        return False
    for v, rest in ((terms[0], terms[1]), (terms[1], terms[0])):
        if not (isinstance(v, Name) and v.name in loops):
            continue
        inner = loops[v.name]
        outer, radix = _scaled(rest, loops)
        if (outer is not None and v.name not in expr_vars(outer, loops)
                and inner.lo == IntLit(0) and inner.step == 1
                and _at_most(inner.hi, radix, loops) and _linearised(outer, loops)):
            return True
    return False


def _scaled(term: Expr, loops: Mapping[str, LoopDim]) -> tuple[Expr | None, Expr]:
    """``(X, E)`` for ``X * E`` or ``E * X`` with ``E`` free of loops (X may be a sum)."""
    if isinstance(term, Binary) and term.op == "*":
        for x, coef in ((term.lhs, term.rhs), (term.rhs, term.lhs)):
            if expr_vars(x, loops) and not expr_vars(coef, loops):
                return x, coef
    return None, IntLit(0)


def _at_most(hi: Expr, bound: Expr, loops: Mapping[str, LoopDim]) -> bool:
    """``hi <= bound`` shown structurally: ``hi`` is ``bound``, or ``w`` / ``w + 1`` for a
    loop ``w in 0 .. bound`` (a causal triangle's ``j in 0 .. i + 1``)."""
    if hi == bound:
        return True
    if isinstance(hi, Binary) and hi.op == "+" and hi.rhs == IntLit(1):
        hi = hi.lhs
    outer = loops.get(hi.name) if isinstance(hi, Name) else None
    return outer is not None and outer.step == 1 and outer.hi == bound


def _sum_terms(expr: Expr, out: list[Expr]) -> bool:
    """Flatten ``a + b + c`` into ``out``; ``False`` on a subtraction of a loop term."""
    if isinstance(expr, Binary) and expr.op == "+":
        return _sum_terms(expr.lhs, out) and _sum_terms(expr.rhs, out)
    out.append(expr)
    return True


def _scaled_var(term: Expr, loops: Mapping[str, LoopDim]) -> tuple[str | None, Expr]:
    """``(v, 1)`` for ``v``; ``(v, E)`` for ``v * E`` or ``E * v`` with ``E`` free of loops."""
    if isinstance(term, Name) and term.name in loops:
        return term.name, IntLit(1)
    if isinstance(term, Binary) and term.op == "*":
        for var, coef in ((term.lhs, term.rhs), (term.rhs, term.lhs)):
            if isinstance(var, Name) and var.name in loops and not expr_vars(coef, loops):
                return var.name, coef
    return None, IntLit(0)
