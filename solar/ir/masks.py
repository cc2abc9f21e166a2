"""Constant masks: fold index-only tensors and skip work a constant mask provably hides.

Contract: ``Program -> Program`` (pure; the same object when nothing applies). Runs on
verified IR before dead-code elimination, for the bounds only (Note [Constant masks]).

Note [Constant masks]: a causal mask written by hand (``masked_fill`` with a mask built
from ``ones(T, T).tril()``) is known when the program is captured: it depends on indices
only. Three steps turn it into guards the counters understand:

1. **Index formulas.** A temp written by one kernel, over its whole shape with plain
   loop indices, with a value that depends on indices only (a literal; or two writes
   under complementary affine conditions, as ``tril`` lowers) is a formula of its
   indices. Its reads are replaced by the formula (``t9[i, j]`` ->
   ``select(j <= i, 1.0, 0.0)``), and comparisons of such selects with literals fold
   (``select(j <= i, 1.0, 0.0) == 0.0`` -> ``i + 1 <= j``), as do products with the
   literal 1 (``ones_like(loss) * target`` -> ``target``: a backward's seed cotangent
   multiplies nothing; exact in IEEE arithmetic). Its kernel then has no reader
   and dead-code elimination removes it: an implementation can compute the mask from
   indices instead of reading it.
2. **Constant regions (forward).** ``X[v] = select(P, c, Y)`` with ``P`` affine in the
   indices and ``c`` a literal gives X the value ``c`` wherever ``P`` holds. A later
   statement whose value is then a literal there (``exp(X - m)`` is 0 where X is
   ``-inf``; ``E / s`` is 0 where E is 0) passes the region on; a reduction whose term is
   the identity of its operator there (``m max= X`` with ``-inf``, ``s += E`` or
   ``O += P * V`` with 0) is guarded by ``not P``: skipping an identity term leaves the
   result unchanged.
3. **Dead regions (backward).** A temp or local whose every read is guarded by one
   condition ``Q`` (an ``if`` or the branch of a ``select`` it sits in) is never read
   outside ``Q``: its writers are guarded by ``Q`` too (the upper triangle of ``Q K^T``
   is overwritten by the mask, so it need not be computed).

Soundness (the bound stays a lower bound): every rewrite preserves the values of every
program output for finite inputs. Assumptions, as for ``sdpa(is_causal=True)``: values
outside a known region are finite (``-inf - m`` is ``-inf``, ``0 * v`` is 0); a
``max=`` reduction is only taken as finite when its guarded range is provably non-empty
at every outer point (every row of a causal mask keeps its diagonal), otherwise
subtractions of it are not folded. Only affine comparisons over literal shapes are
handled; anything else is left as it is (dense work, a lower bound all the same).

Note [Conjunctions]: a sliding-window (local) attention mask keeps a band,
``i - w <= j <= i``: two comparisons joined by ``and`` (``tril(ones).triu(-w)``, whose
formula is a select nested in a select and folds to ``select(a and b, 1.0, 0.0)``;
``tril(ones) * triu(ones, -w)`` of two 0/1 literals; ``m1 & m2`` of two bool masks). A
condition is therefore a *conjunction* of affine comparisons (`conjunction`): guards and
select branches add each of them, and the writers of a tensor read only inside the band
are guarded by all of them (nested ``if``s, which the counters count exactly). Its
negation is a disjunction, which no guard expresses, so a constant region is stored as
the conjunction *outside* of which the value holds (`_Region.outside`): the masked-out
scores of a band hold ``-inf`` outside ``a and b``, and the identity terms of a reduction
are skipped by guarding it with ``a and b``. A ``max=`` over a band is finite when every
row keeps a point (`solar.ir.predicates.nonempty`: with unit coefficients on the reduced index,
each comparison bounds it from one side, and the interval left is non-empty at every
outer point exactly when each lower bound is at most each upper bound over the box of
outer loops, an affine check at the box's corners). A disjunction (``not (a and b)``
inside a guard) is left alone: the work stays dense, a lower bound all the same.

Note [Mask spellings]: a causal mask reaches the scores in many spellings: added
(``s + triu(full(-inf), 1)``, ``generate_square_subsequent_mask``, PyTorch's math-path
``is_causal``: ``where(tril, 0, -inf)``), filled (``masked_fill(~tril_buffer, -inf)``,
minGPT's ``bias[:, :, :T, :T] == 0``), or multiplied in as 0/1. Step 2 brings the
condition to the top of the statement (`_hoist`): an index-only select inside the value
whose one branch makes the value a literal (``S + select(j > i, -inf, 0.0)`` is
``select(j > i, -inf, S)``), and a read in a known region likewise (``exp(X - m)`` is
``select(j <= i, exp(X - m), 0.0)``). The other operands are then read only where the
mask keeps them, so step 3 guards their writers: Q K^T is charged on the triangle, not
only P V. Casts to a float type keep ``0``, ``+-1`` and ``+-inf`` exactly (bf16, fp8
scores), a ``select`` whose branches are the same literal is that literal (the
``_safe_softmax`` of an all-masked row), and a read in the writer's own kernel sees the
region once the writer's loop over that dimension has finished (`_Region.written_at`).
Loop bounds may be sizes: `solar.ir.predicates.nonempty` checks a row keeps its diagonal
for every positive binding, so a symbolic sequence length folds too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from solar.ir.folding import (
    const_value,
    drop_identities,
    fold_all,
    inline_literal_scalars,
    literal_value,
)
from solar.ir.nodes import (
    Access,
    Assign,
    Binary,
    Call,
    Cast,
    Expr,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    Stmt,
    Unary,
    lit,
)
from solar.ir.predicates import (
    Pred,
    all_from_dims,
    all_to_dims,
    conjunction,
    conjunction_not,
    from_dims,
    negate,
    nonempty,
    pred_expr,
    pred_of,
    to_dims_partial,
)
from solar.ir.traversal import is_index_condition, map_expr, walk_exprs

__all__ = ["elide_masked_work"]

_IDENTITY = {"+": 0.0, "max": -math.inf, "min": math.inf, "*": 1.0}


@dataclass(frozen=True, slots=True)
class _Region:
    """``tensor`` holds ``value`` wherever the conjunction ``outside`` (over its dims) does
    not hold, once written by ``target`` in ``kernel`` inside ``loops`` (a read in that
    same kernel counts only where the writer has produced the element: `written_at`). Stored
    as its complement so that a band's two masked-out triangles are one region (Note
    [Conjunctions])."""

    value: float
    outside: tuple[Pred, ...]
    kernel: str = ""
    target: tuple[Expr, ...] = ()
    loops: tuple[For, ...] = ()

    def written_at(self, a: Access, loops: tuple[For, ...]) -> bool:
        """True if a read ``a`` in the writer's kernel, inside ``loops``, sees an element
        the writer has produced: each subscript is the writer's, or the writer's is a loop
        that has finished (it encloses the writer but not the read; the writer covers that
        loop's whole range, so every element along it is written)."""
        open_ = {id(f) for f in loops}
        mine = {f.var: f for f in self.loops}
        return all(w == x or (isinstance(w, Name) and w.name in mine
                              and id(mine[w.name]) not in open_)
                   for w, x in zip(self.target, a.indices, strict=True))


# ----------------------------------------------------------------------- statements

_Leaf = Assign | Reduce
_Visit = Callable[[_Leaf, tuple[For, ...], tuple[Pred, ...]], Stmt]


def _loop_vars(loops: tuple[For, ...]) -> frozenset[str]:
    return frozenset(f.var for f in loops)


def _walk(body: tuple[Stmt, ...], visit: _Visit, sizes: frozenset[str],
          loops: tuple[For, ...] = (), guards: tuple[Pred, ...] = ()) -> tuple[Stmt, ...]:
    """Rewrite every leaf with ``visit(leaf, enclosing loops, enclosing index guards)``."""
    out: list[Stmt] = []
    for st in body:
        match st:
            case For():
                out.append(replace(st, body=_walk(st.body, visit, sizes, (*loops, st), guards)))
            case If():
                ps = conjunction(st.cond, _loop_vars(loops) | sizes)
                g = guards if ps is None else (*guards, *ps)
                out.append(replace(st, body=_walk(st.body, visit, sizes, loops, g)))
            case _:
                out.append(visit(st, loops, guards))
    return tuple(out)


def _sizes(program: Program) -> frozenset[str]:
    """The program's size names: variables of predicates (Note [Size terms])."""
    return frozenset(d.name for d in program.sizes)


def _leaves(program: Program) -> list[tuple[_Leaf, tuple[For, ...], tuple[Pred, ...]]]:
    found: list[tuple[_Leaf, tuple[For, ...], tuple[Pred, ...]]] = []

    def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
        found.append((st, loops, guards))
        return st

    sizes = _sizes(program)
    for k in program.kernels:
        _walk(k.body, visit, sizes)
    return found


def _guarded(st: Stmt, ps: tuple[Pred, ...], guards: tuple[Pred, ...]) -> Stmt:
    """``st`` under every condition of ``ps`` not among ``guards`` (innermost last)."""
    for p in reversed(ps):
        if p not in guards:
            st = If(pred_expr(p), (st,))
    return st


def _reads(e: Expr, preds: tuple[Pred, ...], loop_vars: frozenset[str],
           out: list[tuple[Access, tuple[Pred, ...]]]) -> None:
    """Every read in ``e`` with the select-branch conditions it sits under."""
    match e:
        case Access():
            out.append((e, preds))
            for i in e.indices:
                _reads(i, preds, loop_vars, out)
        case Call(func="select", args=(c, a, b)):
            _reads(c, preds, loop_vars, out)
            pa, pb = conjunction(c, loop_vars), conjunction_not(c, loop_vars)
            _reads(a, preds if pa is None else (*preds, *pa), loop_vars, out)
            _reads(b, preds if pb is None else (*preds, *pb), loop_vars, out)
        case Unary(operand=o) | Cast(operand=o):
            _reads(o, preds, loop_vars, out)
        case Binary(lhs=a, rhs=b):
            _reads(a, preds, loop_vars, out)
            _reads(b, preds, loop_vars, out)
        case Call(args=args):
            for a in args:
                _reads(a, preds, loop_vars, out)
        case _:
            pass


def _subst(e: Expr, target: Access, value: Expr) -> Expr:
    return map_expr(e, lambda x: value if x == target else None)


# ----------------------------------------------------------------------- the pass


class _Masks:
    """The state of one run of `elide_masked_work` over a program."""

    def __init__(self, program: Program, keep: frozenset[str]) -> None:
        self.program = program
        self.decls = {t.name: t for t in program.tensors}
        for k in program.kernels:
            self.decls.update((t.name, t) for t in k.locals)
        self.keep = keep
        self.sizes = {d.name: d.value for d in program.sizes}
        self.names = _sizes(program)
        self.writers: dict[str, int] = {}
        for st, _, _ in _leaves(program):
            self.writers[st.target.tensor] = self.writers.get(st.target.tensor, 0) + 1

    def full_range(self, target: Access, loops: tuple[For, ...]) -> bool:
        """The target's subscripts are distinct plain loops over the whole shape (a dim
        may be a head split in two, ``A * h + r``: Note [Split heads])."""
        decl = self.decls[target.tensor]
        by_var = {f.var: f for f in loops}
        seen: list[str] = []
        for s, extent in zip(target.indices, decl.shape, strict=True):
            if isinstance(s, IntLit) and s.value == 0 and extent == IntLit(1):
                continue
            dims = [(s, extent)] if isinstance(s, Name) else _split_dim(s, extent, self.sizes)
            for v, hi in dims or [(Name(""), extent)]:
                f = by_var.get(v.name)
                if (f is None or f.seq or f.step != 1 or f.lo != IntLit(0) or f.hi != hi
                        or v.name in seen):
                    return False
                seen.append(v.name)
        return True

    def maskable(self, name: str) -> bool:
        decl = self.decls.get(name)
        return (decl is not None and decl.role in ("temp", "local")
                and name not in self.keep and self.writers.get(name, 0) >= 1)


def _split_dim(s: Expr, extent: Expr, sizes: Mapping[str, Expr]) -> list[tuple[Name, Expr]]:
    """Note [Split heads]: ``A * h + r`` over a dim of extent ``A * B`` (or ``E`` with ``A``
    the size ``E // B``: grouped-query attention's query heads per K/V head) covers the dim
    when ``r`` runs over ``0 .. A`` and ``h`` over ``0 .. B``: ``[(h, B), (r, A)]``, or
    ``[]`` for any other subscript."""
    if not (isinstance(s, Binary) and s.op == "+" and isinstance(s.rhs, Name)
            and isinstance(s.lhs, Binary) and s.lhs.op == "*"):
        return []
    a, h = s.lhs.lhs, s.lhs.rhs
    if isinstance(a, Name) and a.name not in sizes:
        a, h = h, a
    if not isinstance(h, Name):
        return []
    for b in _factors(extent, a, sizes):
        return [(h, b), (s.rhs, a)]
    return []


def _factors(extent: Expr, a: Expr, sizes: Mapping[str, Expr]) -> list[Expr]:
    """``B`` with ``extent == a * B`` structurally (``a * B``, ``B * a``, literals, or ``a``
    defined as ``extent // B``)."""
    if isinstance(extent, Binary) and extent.op == "*" and a in (extent.lhs, extent.rhs):
        return [extent.rhs if extent.lhs == a else extent.lhs]
    if isinstance(extent, IntLit) and isinstance(a, IntLit) and a.value > 0 and (
            extent.value % a.value == 0):
        return [IntLit(extent.value // a.value)]
    d = sizes.get(a.name) if isinstance(a, Name) else None
    if isinstance(d, Binary) and d.op == "//" and d.lhs == extent:
        return [d.rhs]
    return []


def _formula(m: _Masks, k: Kernel) -> tuple[str, Access, Expr] | None:
    """``(tensor, its write access, value)`` when kernel ``k`` writes an index formula."""
    loops: list[For] = []
    body = k.body
    while len(body) == 1 and isinstance(body[0], For):
        loops.append(body[0])
        body = body[0].body
    lv = _loop_vars(tuple(loops)) | m.names
    if len(body) == 1 and isinstance(body[0], Assign):
        target, value = body[0].target, body[0].value
    elif (len(body) == 2 and all(isinstance(b, If) and len(b.body) == 1
                                 and isinstance(b.body[0], Assign) for b in body)):
        (c1, s1), (c2, s2) = ((b.cond, b.body[0]) for b in body)  # type: ignore[union-attr]
        p1, p2 = pred_of(c1, lv), pred_of(c2, lv)
        if p1 is None or p2 != negate(p1) or s1.target != s2.target:  # type: ignore[union-attr]
            return None
        target, value = s1.target, Call("select", (c1, s1.value, s2.value))  # type: ignore[union-attr]
    else:
        return None
    name = target.tensor
    if (m.decls[name].role != "temp" or m.writers.get(name) != len(body) or k.locals
            or not m.full_range(target, tuple(loops))):
        return None
    if any(isinstance(x, Access) for x in _all(value)):
        return None
    return name, target, fold_all(value, lv)


def _all(e: Expr) -> list[Expr]:
    out: list[Expr] = []
    map_expr(e, lambda x: out.append(x) or None)  # type: ignore[func-returns-value]
    return out


def _inline_formulas(m: _Masks) -> Program:
    """Step 1: replace reads of index-formula temps by their formulas."""
    formulas: dict[str, tuple[Access, Expr]] = {}
    kernels = []
    for k in m.program.kernels:
        if formulas:
            def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
                lv = _loop_vars(loops) | m.names
                if isinstance(st, Reduce) and sum(isinstance(x, Access)
                                                  for x in _all(st.value)) >= 2:
                    # a product of two reads is tensor-core work; a literal in place of
                    # one would move it to the vector pipe, which can be slower
                    return st

                # reads inside subscripts (a gather through an ``arange`` temp) stay reads
                inner = {id(e) for a in walk_exprs(st.value) if isinstance(a, Access)
                         for i in a.indices for e in walk_exprs(i)}

                def sub(x: Expr) -> Expr | None:
                    if isinstance(x, Access) and x.tensor in formulas and id(x) not in inner:
                        w, f = formulas[x.tensor]
                        names = {s.name: i for s, i in zip(w.indices, x.indices, strict=True)
                                 if isinstance(s, Name)}
                        return map_expr(f, lambda y: names.get(y.name) if isinstance(y, Name)
                                    else None)
                    return None

                new = fold_all(map_expr(st.value, sub), lv)
                return st if new == st.value else replace(st, value=new)

            k = replace(k, body=_walk(k.body, visit, m.names))
        f = _formula(m, k)
        if f is not None:
            formulas[f[0]] = (f[1], f[2])
        kernels.append(k)
    return replace(m.program, kernels=tuple(kernels))



def _forward(m: _Masks, program: Program) -> Program:
    """Step 2: constant regions and the reductions they make identity terms."""
    regions: dict[str, _Region] = {}
    nonfinite: set[str] = set()
    current = [""]

    def finite(a: Access) -> bool:
        return a.tensor not in nonfinite

    def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
        lv = _loop_vars(loops) | m.names
        hits = _hits(st.value, loops, regions, current[0], m.names)
        if isinstance(st, Reduce):
            return _reduce_identity(st, loops, guards, hits, finite, nonfinite)
        st = _hoist(st, lv, hits, finite)
        if m.writers.get(st.target.tensor) == 1 and m.full_range(st.target, loops) and not guards:
            region = _assign_region(st, lv, hits, finite, m.names)
            if region is not None:
                regions[st.target.tensor] = replace(region, kernel=current[0],
                                                    target=st.target.indices, loops=loops)
        return st

    kernels = []
    for k in program.kernels:
        current[0] = k.name
        kernels.append(replace(k, body=_walk(k.body, visit, m.names)))
    return replace(program, kernels=tuple(kernels))


def _reduce_identity(st: Reduce, loops: tuple[For, ...], guards: tuple[Pred, ...],
                     hits: list[tuple[Access, _Region, tuple[Pred, ...]]],
                     finite: Callable[[Access], bool], nonfinite: set[str]) -> Stmt:
    """Step 2 for a reduction: guarded where a constant region makes its terms the
    identity; a max/min that may see an infinite term (or no term) joins ``nonfinite``."""
    ident = _IDENTITY.get(st.op)
    for a, r, keep in hits:
        v = const_value(_subst(st.value, a, lit(r.value)), finite)
        if ident is None or v != ident:
            continue
        if st.op in ("max", "min"):
            reduced = _loop_vars(loops) - {x.name for s in st.target.indices
                                            for x in walk_exprs(s) if isinstance(x, Name)}
            if not nonempty(keep, loops, reduced):
                nonfinite.add(st.target.tensor)
        return _guarded(st, keep, guards)
    if st.op in ("max", "min") and any(math.isinf(r.value) for _, r, _ in hits):
        nonfinite.add(st.target.tensor)
    return st


def _hoist(st: Assign, lv: frozenset[str], hits: list[tuple[Access, _Region, tuple[Pred, ...]]],
           finite: Callable[[Access], bool]) -> Assign:
    """Note [Mask spellings]: ``st`` with the condition that makes its value a literal
    brought to the top, ``select(c, -inf, S)``, so that the other operands are read only
    where the mask keeps them (and their writers can be guarded, step 3).

    An index-only select inside the value (``S + select(j > i, -inf, 0.0)``, an additive
    mask; ``S * select(j <= i, 1.0, 0.0)``) whose one branch makes the whole value a
    literal is taken out (``+ 0.0`` dropped from the other branch); a read that a known
    region makes a literal does the same with the region's conjunction. Values are equal
    under the finite-values assumption of Note [Constant masks].
    """
    if isinstance(st.value, Call) and st.value.func == "select" and any(
            isinstance(literal_value(b), float) for b in st.value.args[1:]):
        return st
    for s in walk_exprs(st.value):
        if not (isinstance(s, Call) and s.func == "select" and is_index_condition(s.args[0])):
            continue
        c, a, b = s.args
        for branch, other, first in ((a, b, True), (b, a, False)):
            v = const_value(_replace(st.value, s, branch), finite)
            if v is None:
                continue
            rest = drop_identities(_replace(st.value, s, other))
            return replace(st, value=Call("select", (c, lit(v), rest) if first
                                          else (c, rest, lit(v))))
    for acc, r, ps in hits:
        v = const_value(_subst(st.value, acc, lit(r.value)), finite)
        if v is not None and ps:
            cond = pred_expr(ps[0])
            for p in ps[1:]:
                cond = Binary("and", cond, pred_expr(p))
            return replace(st, value=Call("select", (cond, st.value, lit(v))))
    return st


def _replace(e: Expr, node: Expr, value: Expr) -> Expr:
    return map_expr(e, lambda x: value if x is node else None)


def _hits(value: Expr, loops: tuple[For, ...], regions: Mapping[str, _Region],
          kernel: str, sizes: frozenset[str]) -> list[tuple[Access, _Region, tuple[Pred, ...]]]:
    """The reads of ``value`` that fall in a known region, with the conditions (over the
    loop variables) outside of which they do."""
    hits = []
    lv = _loop_vars(loops) | sizes
    for a, _ in _collect(value, lv):
        r = regions.get(a.tensor)
        if r is None or (r.kernel == kernel and not r.written_at(a, loops)):
            continue
        ps = all_from_dims(r.outside, a.indices, lv, sizes)
        if ps is not None:
            hits.append((a, r, ps))
    return hits


def _assign_region(st: Assign, lv: frozenset[str],
                   hits: list[tuple[Access, _Region, tuple[Pred, ...]]],
                   finite: Callable[[Access], bool], sizes: frozenset[str]) -> _Region | None:
    """The constant region an assignment over a whole tensor gives its target, if any."""
    target, sel = st.target, st.value
    if isinstance(sel, Call) and sel.func == "select":
        c = sel.args[0]
        # the first branch is taken inside `c`, so outside `not c`; the second outside `c`
        for value, outside in ((sel.args[1], conjunction_not(c, lv)),
                               (sel.args[2], conjunction(c, lv))):
            v = literal_value(value)
            dims = None if not outside else all_to_dims(outside, target.indices, sizes)
            if isinstance(v, float) and dims is not None:
                return _Region(v, dims)
    for a, r, ps in hits:
        v = const_value(_subst(st.value, a, lit(r.value)), finite)
        dims = all_to_dims(ps, target.indices, sizes)
        if v is not None and dims is not None:
            return _Region(v, dims)
    return None


def _collect(e: Expr, lv: frozenset[str]) -> list[tuple[Access, tuple[Pred, ...]]]:
    out: list[tuple[Access, tuple[Pred, ...]]] = []
    _reads(e, (), lv, out)
    return out


def _backward(m: _Masks, program: Program) -> Program:
    """Step 3: guard the writers of a temp or local that is only read under one condition."""
    for _ in range(16):
        sites: dict[str, list[tuple[Access, tuple[Pred, ...], frozenset[str]]]] = {}
        for st, loops, guards in _leaves(program):
            lv = _loop_vars(loops) | m.names
            for a, preds in _collect(st.value, lv):
                sites.setdefault(a.tensor, []).append((a, (*guards, *preds), lv))
            for i in st.target.indices:
                for a, preds in _collect(i, lv):
                    sites.setdefault(a.tensor, []).append((a, (*guards, *preds), lv))
        for k in program.kernels:
            _cond_sites(k.body, (), (), sites, m.names)
        changed = False
        for name, reads in sites.items():
            q = _common_guard(reads, m.names) if m.maskable(name) else None
            if q is None:
                continue
            new = _guard_writers(program, name, q, m.names)
            if new is not program:
                program, changed = new, True
        if not changed:
            break
    return program


def _cond_sites(body: tuple[Stmt, ...], loops: tuple[For, ...], guards: tuple[Pred, ...],
                sites: dict[str, list[tuple[Access, tuple[Pred, ...], frozenset[str]]]],
                sizes: frozenset[str]) -> None:
    """The reads in ``if`` conditions (value-dependent ones read tensors too)."""
    for st in body:
        if isinstance(st, For):
            _cond_sites(st.body, (*loops, st), guards, sites, sizes)
        elif isinstance(st, If):
            lv = _loop_vars(loops) | sizes
            for a, preds in _collect(st.cond, lv):
                sites.setdefault(a.tensor, []).append((a, (*guards, *preds), lv))
            ps = conjunction(st.cond, lv)
            _cond_sites(st.body, loops, guards if ps is None else (*guards, *ps), sites, sizes)


def _common_guard(
    reads: list[tuple[Access, tuple[Pred, ...], frozenset[str]]], sizes: frozenset[str],
) -> tuple[Pred, ...] | None:
    """The conditions over the tensor's dims that every read sits under, if any."""
    first, guards, _ = reads[0]
    common: list[Pred] = []
    for g in guards:
        q = to_dims_partial(g, first.indices, sizes)
        if q is None or q in common:
            continue
        if all(from_dims(q, a.indices, lv, sizes) in gs for a, gs, lv in reads):
            common.append(q)
    return tuple(common) or None



def _guard_writers(program: Program, name: str, qs: tuple[Pred, ...], sizes: frozenset[str]
                   ) -> Program:
    def visit(st: _Leaf, loops: tuple[For, ...], guards: tuple[Pred, ...]) -> Stmt:
        if st.target.tensor != name:
            return st
        lv = _loop_vars(loops) | sizes
        ps = tuple(p for q in qs
                   if (p := from_dims(q, st.target.indices, lv, sizes)) is not None)
        return _guarded(st, ps, guards)

    kernels = tuple(replace(k, body=_walk(k.body, visit, sizes)) for k in program.kernels)
    return program if kernels == program.kernels else replace(program, kernels=kernels)


def elide_masked_work(program: Program, *, keep: frozenset[str] = frozenset()) -> Program:
    """Skip the work a constant, index-only mask hides (Note [Constant masks]).

    Args:
        program: verified IR.
        keep: tensors read outside the IR (uncovered ops): never guarded.

    Returns:
        An equivalent program (same outputs for finite inputs) with the mask computed
        from indices and the masked-out work under guards; ``program`` itself when no
        mask applies.
    """
    m = _Masks(program, keep)
    p = replace(program, kernels=tuple(inline_literal_scalars(k, lambda t: m.writers.get(t, 0))
                                       for k in program.kernels))
    m = _Masks(p, keep)
    p = _inline_formulas(m)
    m = _Masks(p, keep)
    p = _forward(m, p)
    p = _backward(m, p)
    return program if p == program else p
