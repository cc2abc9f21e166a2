"""Lift a verified program to an einsum graph with exact (or lower-bound) counts.

Contract: ``Program -> EinsumGraph``, deterministic. The input is assumed to pass
`solar.ir.verify_program`. Each leaf statement becomes an `EinsumNode` (a
value-dependent ``if`` adds a ``guard`` node for its condition); each kernel gets a
`KernelCost` (FLOPs by work class, distinct elements per program-level tensor);
the graph records dataflow edges, contraction nodes for the cache-aware model, and
provable global-reduction re-reads. Counting rules: docs/bounds.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from solar.einsum.cost import (
    ReadSite,
    analyse_value,
    contraction_operands,
    is_affine_condition,
)
from solar.einsum.count import Count, CountContext, Domain, LoopDim, expr_vars, split_conjuncts
from solar.einsum.graph import (
    ContractionInfo,
    Edge,
    EinsumGraph,
    EinsumNode,
    FlopGroup,
    KernelCost,
    Operand,
    SpillInfo,
    TensorInfo,
    TensorTraffic,
    WorkClass,
)
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
    Role,
    TensorDecl,
)
from solar.ir.traversal import walk_exprs, walk_stmts
from solar.symbolic import SymExpr, product, to_sympy

__all__ = ["lift_to_einsum"]

_ZERO = Count.of(0)
_LOWER_ZERO = Count.of(0, exact=False)
_ZERO_KEY = "zero"  # the image of an access that may not execute (value-dependent)


@dataclass(frozen=True, slots=True)
class _Leaf:
    """A lifted node with what later passes need from its statement."""

    node: EinsumNode
    stmt: Assign | Reduce | None
    kernel_index: int
    reads: dict[str, list[_Img]]
    writes: dict[str, list[_Img]]


@dataclass(frozen=True, slots=True)
class _Img:
    """An access image: its count, canonical key and what containment needs."""

    count: Count
    key: str
    loops: tuple[LoopDim, ...]
    guards: tuple[Expr, ...]
    indices: tuple[Expr, ...]


def _contains(big: _Img, small: _Img) -> bool:
    """True if ``small``'s image is provably a subset of ``big``'s.

    Same key, or the same subscripts over a domain that extends ``big``'s loops
    (as a prefix) and adds guards: every point of ``small`` projects onto a point of
    ``big`` with the same subscript values.
    """
    if big.key == small.key:
        return True
    if big.key == _ZERO_KEY:
        return False
    return (
        big.indices == small.indices
        and small.loops[: len(big.loops)] == big.loops
        and set(big.guards) <= set(small.guards)
    )


def lift_to_einsum(program: Program) -> EinsumGraph:
    """Lift ``program`` to an `EinsumGraph`.

    Args:
        program: a verified program.

    Returns:
        The einsum graph; all counts are symbolic in the program's sizes.

    >>> from solar.ir import parse_program
    >>> g = lift_to_einsum(parse_program('''solar-ir 1
    ... program mm
    ... size M = 4
    ... size N = 5
    ... size K = 6
    ... input A : f32[M, K]
    ... param B : f32[K, N]
    ... output C : f32[M, N]
    ... kernel mm { for m in 0 .. M { for n in 0 .. N { C[m, n] = 0.0
    ...   for k in 0 .. K { C[m, n] += A[m, k] * B[k, n] } } } }'''))
    >>> g.nodes[1].equation, g.kernels[0].flops.formula, g.kernels[0].unit
    ('mk,kn->mn', '2*K*M*N', 'contraction')
    """
    ctx = CountContext(_definitions(program))
    scope = _Scope.of(program)
    leaves: list[_Leaf] = []
    kernels: list[KernelCost] = []
    for ki, kernel in enumerate(program.kernels):
        kl = _lift_kernel(scope, kernel, ki, ctx)
        leaves.extend(kl)
        kernels.append(_kernel_cost(scope, kernel, ki, kl))
    nodes = tuple(lf.node for lf in leaves)
    return EinsumGraph(
        program=program,
        nodes=nodes,
        kernels=tuple(kernels),
        tensors=_tensor_infos(scope, kernels),
        edges=_edges(kernels),
        contractions=tuple(_contractions(scope, leaves, ctx)),
        spills=tuple(_spills(scope, leaves)),
    )


@dataclass(frozen=True, slots=True)
class _Scope:
    """The program with its declarations indexed by name (locals included)."""

    program: Program
    decls: Mapping[str, TensorDecl]
    order: Mapping[str, int]

    @staticmethod
    def of(program: Program) -> _Scope:
        decls = {t.name: t for k in program.kernels for t in k.locals}
        decls.update((t.name, t) for t in program.tensors)
        return _Scope(program, decls, {t.name: i for i, t in enumerate(program.tensors)})


def _definitions(program: Program) -> dict[str, SymExpr]:
    """Derived sizes as expressions of free sizes (for proofs)."""
    defs: dict[str, SymExpr] = {}
    for decl in program.sizes:
        if isinstance(decl.value, IntLit):
            continue
        try:
            defs[decl.name] = to_sympy(decl.value, sizes=defs)
        except ValueError:
            continue
    return defs


# --------------------------------------------------------------------------- nodes


def _lift_kernel(scope: _Scope, kernel: Kernel, ki: int, ctx: CountContext) -> list[_Leaf]:
    out: list[_Leaf] = []
    position: dict[int, int] = {}
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
            out.append(_guard_node(scope, ctx, stmt, common, ki))
        elif isinstance(stmt, Assign | Reduce):
            out.append(_leaf_node(scope, ctx, stmt, common, ki))
    return out


_Common = tuple[str, int, Domain, bool, int | None]


def _image(ctx: CountContext, domain: Domain, access: Access) -> _Img:
    """Distinct elements an access touches; indirect subscripts are projected away."""
    direct = tuple(i for i in access.indices if not any(isinstance(e, Access)
                                                        for e in walk_exprs(i)))
    count, key = ctx.image(domain, direct)
    if len(direct) != len(access.indices):
        # Note [Gathers]: the rows an index tensor selects are data-dependent; the
        # projection onto the direct subscripts (at least one row) is a lower bound.
        count, key = Count(count.expr, count.deferred, False), f"{key}|gather"
    return _Img(count, key, domain.loops, domain.guards, access.indices)


def _union(items: Sequence[_Img]) -> tuple[Count, _Img | None]:
    """Union of images: exact when one contains all others, else the max (a lower bound)."""
    if not items:
        return _ZERO, None
    uniq = list({img.key: img for img in items}.values())
    survivors = [
        a for i, a in enumerate(uniq)
        if not any(
            j != i and _contains(b, a) and (not _contains(a, b) or j < i)
            for j, b in enumerate(uniq)
        )
    ]
    if len(survivors) == 1:
        return survivors[0].count, survivors[0]
    out = survivors[0].count
    if _disjoint_boxes(survivors):
        # Note [Disjoint boxes]: pieces of one tensor (``cat``/``stack`` outputs, ``split``
        # inputs) are disjoint boxes of subscripts, so the union is the sum.
        for img in survivors[1:]:
            out = out + img.count
        return out, None
    for img in survivors[1:]:
        out = out.maximum(img.count, exact=False)
    return out, None


def _offset(e: Expr) -> tuple[str | None, int] | None:
    """``(var, c)`` for a subscript ``var + c``/``var - c``/``var``, ``(None, c)`` for ``c``."""
    match e:
        case IntLit(value=c):
            return None, c
        case Name(name=v):
            return v, 0
        case Binary(op="+", lhs=Name(name=v), rhs=IntLit(value=c)):
            return v, c
        case Binary(op="+", lhs=IntLit(value=c), rhs=Name(name=v)):
            return v, c
        case Binary(op="-", lhs=Name(name=v), rhs=IntLit(value=c)):
            return v, -c
        case _:
            return None


def _box(img: _Img) -> tuple[tuple[int, int], ...] | None:
    """The subscript box ``[lo, hi)`` per dimension, if the image is provably that box.

    Every subscript is ``var + c`` (each loop variable in at most one subscript) or a
    constant, over unguarded, step-1, non-empty loops with literal bounds; else None.
    """
    if img.key == _ZERO_KEY or img.guards:
        return None
    ranges: dict[str, tuple[int, int]] = {}
    for lp in img.loops:
        if not (isinstance(lp.lo, IntLit) and isinstance(lp.hi, IntLit)) or lp.step != 1:
            return None
        if lp.hi.value <= lp.lo.value:
            return None
        ranges[lp.var] = (lp.lo.value, lp.hi.value)
    box: list[tuple[int, int]] = []
    used: set[str] = set()
    for e in img.indices:
        off = _offset(e)
        if off is None:
            return None
        var, c = off
        if var is None:
            box.append((c, c + 1))
            continue
        if var not in ranges or var in used:
            return None
        used.add(var)
        lo, hi = ranges[var]
        box.append((lo + c, hi + c))
    return tuple(box)


def _disjoint_boxes(items: Sequence[_Img]) -> bool:
    """True if every image is a box (see `_box`) and no two of them intersect."""
    boxes = [_box(img) for img in items]
    if any(b is None for b in boxes):
        return False
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert a is not None and b is not None
            if len(a) != len(b) or all(
                lo1 < hi2 and lo2 < hi1 for (lo1, hi1), (lo2, hi2) in zip(a, b, strict=True)
            ):
                return False
    return True


def _by_tensor(
    ctx: CountContext, domain: Domain, sites: Sequence[ReadSite], skip: bool
) -> dict[str, list[_Img]]:
    grouped: dict[str, list[_Img]] = {}
    for site in sites:
        if skip:
            img = _Img(_LOWER_ZERO, _ZERO_KEY, (), (), ())
        else:
            img = _image(ctx, domain.with_guards(site.guards), site.access)
        grouped.setdefault(site.access.tensor, []).append(img)
    return grouped


def _summary(grouped: dict[str, list[_Img]]) -> tuple[tuple[str, Count, str], ...]:
    out = []
    for tensor, items in grouped.items():
        count, img = _union(items)
        out.append((tensor, count, img.key if img is not None else f"union:{tensor}"))
    return tuple(out)


def _flops(ctx: CountContext, domain: Domain, terms: Sequence[tuple[int, tuple[Expr, ...]]],
           skip: bool) -> Count:
    if skip:
        return _LOWER_ZERO
    out = _ZERO
    for flops, guards in terms:
        out = out + ctx.points(domain.with_guards(guards)) * flops
    return out


def _operands(reads: Sequence[ReadSite], target: Access | None) -> tuple[Operand, ...]:
    seen: list[Operand] = []
    for r in reads:
        op = Operand(r.access.tensor, r.access.indices, "read")
        if op not in seen:
            seen.append(op)
    if target is not None:
        seen.append(Operand(target.tensor, target.indices, "write"))
    return tuple(seen)


def _guard_node(scope: _Scope, ctx: CountContext, stmt: If, common: _Common, ki: int) -> _Leaf:
    kernel, index, domain, value_guarded, seq_root = common
    terms, reads = analyse_value(stmt.cond, domain.vars)
    grouped = _by_tensor(ctx, domain, reads, value_guarded)
    dtype = scope.decls[reads[0].access.tensor].dtype if reads else DType.F32
    node = EinsumNode(
        kernel=kernel, index=index, kind="guard", domain=domain, value_guarded=value_guarded,
        seq_root=seq_root, operands=_operands(reads, None), combine=stmt.cond, reduce_op=None,
        flops=_flops(ctx, domain, [(t.flops, t.guards) for t in terms], value_guarded),
        work="vector", dtype=dtype if dtype.is_float else DType.F32, convolution=False,
        reads=_summary(grouped), writes=(),
    )
    return _Leaf(node, None, ki, grouped, {})


def _leaf_node(
    scope: _Scope, ctx: CountContext, stmt: Assign | Reduce, common: _Common, ki: int
) -> _Leaf:
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
        conv = any(len(expr_vars(i, domain.vars)) >= 2 for a in pair for i in a.indices) or (
            "conv" in str(kernel).lower()
        )
    written = {stmt.target.tensor: [
        _Img(_LOWER_ZERO, _ZERO_KEY, (), (), ()) if value_guarded
        else _image(ctx, domain, stmt.target)
    ]}
    grouped = _by_tensor(ctx, domain, reads, value_guarded)
    node = EinsumNode(
        kernel=kernel, index=index, kind="reduce" if isinstance(stmt, Reduce) else "assign",
        domain=domain, value_guarded=value_guarded, seq_root=seq_root,
        operands=_operands([r for r in reads if r.access is not stmt.target], stmt.target),
        combine=stmt.value, reduce_op=stmt.op if isinstance(stmt, Reduce) else None,
        flops=_flops(ctx, domain, flop_terms, value_guarded), work=work, dtype=dtype,
        convolution=conv, reads=_summary(grouped), writes=_summary(written),
    )
    return _Leaf(node, stmt, ki, grouped, written)


# --------------------------------------------------------------------------- kernels


def _kernel_cost(scope: _Scope, kernel: Kernel, ki: int, leaves: Sequence[_Leaf]) -> KernelCost:
    nodes = [lf.node for lf in leaves]
    groups: dict[tuple[WorkClass, DType, bool], Count] = {}
    for n in nodes:
        if not n.flops.is_zero:
            key = (n.work, n.dtype, n.convolution)
            groups[key] = groups.get(key, _ZERO) + n.flops
    flop_groups = tuple(FlopGroup(w, d, c, f) for (w, d, c), f in groups.items())
    local_names = {t.name for t in kernel.locals}
    touched: dict[str, tuple[list[tuple[EinsumNode, _Img]], list[tuple[EinsumNode, _Img]]]] = {}
    for lf in leaves:
        for name, imgs in lf.reads.items():
            touched.setdefault(name, ([], []))[0].extend((lf.node, img) for img in imgs)
        for name, imgs in lf.writes.items():
            touched.setdefault(name, ([], []))[1].extend((lf.node, img) for img in imgs)
    traffic = []
    order = scope.order
    for name in sorted(touched, key=lambda n: order.get(n, -1)):
        decl = scope.decls[name]
        if name in local_names or name not in order:
            continue
        reads, writes = touched[name]
        traffic.append(_traffic(decl.name, decl.role, decl.dtype, reads, writes))
    contraction = [n for n in nodes if n.work == "contraction"]
    unit: WorkClass = "contraction" if contraction else "vector"
    if contraction:
        dtype = contraction[0].dtype
    elif flop_groups:
        dtype = flop_groups[0].dtype
    else:
        written = [t.dtype for t in traffic if not t.written_elems.is_zero]
        dtype = written[0] if written else DType.F32
    return KernelCost(kernel.name, ki, flop_groups, tuple(traffic), unit, dtype)


def _traffic(
    name: str, role: Role, dtype: DType,
    reads: Sequence[tuple[EinsumNode, _Img]],
    writes: Sequence[tuple[EinsumNode, _Img]],
) -> TensorTraffic:
    """Charged traffic of one kernel on one tensor (Note [In-kernel reuse])."""
    all_reads, read_img = _union([img for _, img in reads])
    written, write_img = _union([img for _, img in writes])
    charged = all_reads
    if writes and reads:
        # Note [In-kernel reuse]: a read of an element the kernel wrote earlier needs no
        # memory traffic. Reads before any write of the tensor ("early", outside a seq
        # loop that writes it) are charged in full; of the others, at least
        # |reads| - |writes| elements were never written here (0 if every read image
        # lies inside a written image).
        seq_writers = {n.seq_root for n, _ in writes if n.seq_root is not None}
        early_imgs = [
            img for n, img in reads
            if not any(w.index < n.index for w, _ in writes)
            and (n.seq_root is None or n.seq_root not in seq_writers)
        ]
        early, _ = _union(early_imgs)
        covered = all(any(_contains(w, r) for _, w in writes) for _, r in reads)
        rest = _ZERO if covered else (all_reads - written).clamp0()
        if rest.is_zero:
            charged = early
        elif not early_imgs:
            charged = rest
        else:
            charged = early.maximum(rest, exact=False)
    return TensorTraffic(
        name, role, dtype, charged, written, all_reads,
        read_img.key if read_img is not None else None,
        write_img.key if write_img is not None else None,
    )


# --------------------------------------------------------------------------- graph


def _tensor_infos(scope: _Scope, kernels: Sequence[KernelCost]) -> tuple[TensorInfo, ...]:
    out = []
    for decl in scope.program.tensors:
        elements = Count.of(product(to_sympy(d) for d in decl.shape))
        reads, writes = [], []
        for k in kernels:
            for t in k.traffic:
                if t.tensor == decl.name:
                    reads.append((t.raw_read_elems, t.read_key or f"k{k.index}"))
                    writes.append((t.written_elems, t.write_key or f"k{k.index}"))
        comp_r = _union_by_key(reads) if decl.role in ("input", "param") else _ZERO
        comp_w = _union_by_key(writes) if decl.role == "output" else _ZERO
        out.append(TensorInfo(decl.name, decl.role, decl.dtype, elements, comp_r, comp_w))
    return tuple(out)


def _union_by_key(items: Sequence[tuple[Count, str]]) -> Count:
    """Union across kernels: exact when all images share a key, else the max."""
    by_key = {k: c for c, k in items if not c.is_zero}
    if not by_key:
        return _ZERO
    counts = list(by_key.values())
    out = counts[0]
    for c in counts[1:]:
        out = out.maximum(c, exact=False)
    return out


def _edges(kernels: Sequence[KernelCost]) -> tuple[Edge, ...]:
    out: list[Edge] = []
    last_writer: dict[str, str] = {}
    for k in kernels:
        for t in k.traffic:
            if not t.raw_read_elems.is_zero and t.tensor in last_writer:
                out.append(Edge(t.tensor, last_writer[t.tensor], k.name))
        for t in k.traffic:
            if not t.written_elems.is_zero:
                last_writer[t.tensor] = k.name
    return tuple(out)


def _plain_vars(access: Access, loop_vars: Sequence[str]) -> list[str] | None:
    names = [i.name for i in access.indices if isinstance(i, Name) and i.name in loop_vars]
    if len(names) != len(access.indices) or len(set(names)) != len(names):
        return None
    return names


def _contractions(
    scope: _Scope, leaves: Sequence[_Leaf], ctx: CountContext
) -> list[ContractionInfo]:
    # The lift's own context: a second one would reuse the deferred-count names q0, q1...
    # for different counts, and evaluation would bind one name to one of them.
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


def _spills(scope: _Scope, leaves: Sequence[_Leaf]) -> list[SpillInfo]:
    """Provable global-reduction re-reads (Note [Reduction barriers] in docs/bounds.md)."""
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


def _find_consumer(scope: _Scope, leaves: Sequence[_Leaf], ri: int, target: Access,
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

