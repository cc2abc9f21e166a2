"""Lowerings of control flow: ``scan``, ``while`` (static trip count) and ``cond``.

Contract: ``EqnCtx -> None`` (or the outputs, for ``cond``).

* ``scan`` is one kernel: the carries are copied from their initial values into the
  scan's carry outputs, then ``seq for t in 0 .. length`` runs the body, whose equations
  are emitted in place (their intermediates are kernel-locals), reading ``xs[t]`` through
  free views, writing ``ys[t]``, and copying the new carries back (snapshotting carries
  that feed other carries first). ``reverse`` walks ``t`` from the end. A carry whose
  initial value is an input the ``jit`` donates starts in that input's buffer (Note
  [Donated carries]).
* ``while`` is lowered the same way when its trip count is static: the condition is
  one comparison (``<``, ``<=``, ``>``, ``>=``, ``!=``, either way round) of a carry ``i``
  that starts at a literal and that the body steps by a nonzero integer literal, against
  a literal bound (or a constant carry). Otherwise it is uncovered.
* ``cond``/``switch`` at kernel level: each branch's equations are lowered as kernels
  under a value-dependent guard ``if pred[] == k { ... }``, writing the cond's outputs
  directly; the driver records a `CondRegion` per cond (see docs/jax.md, "cond"). Inside
  a loop body, each branch becomes an ``if`` block of the enclosing kernel. A literal
  predicate inlines just the taken branch; ``platform_index`` (platform-dependent conds)
  is the literal index of the GPU branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from solar.frontends.jaxfe.core import EqnOperand, Lit, read
from solar.frontends.jaxfe.driver import LOWERINGS, EqnCtx, NestedSink
from solar.frontends.jaxfe.walk import is_var
from solar.frontends.kit import CondRegion, IndexMap, TensorInfo, UnsupportedOpError
from solar.ir import Binary, Cast, DType, Expr, For, If, IntLit, Stmt, lit

__all__ = ["static_trip_count", "trip_count"]


def _same_storage(a: EqnOperand, b: EqnOperand) -> bool:
    return (
        isinstance(a, TensorInfo)
        and isinstance(b, TensorInfo)
        and a.ref.name == b.ref.name
        and a.is_storage
        and b.is_storage
    )


def _loop(
    ctx: EqnCtx,
    jaxpr: Any,
    consts: Sequence[Any],
    const_ins: Sequence[EqnOperand],
    init: Sequence[EqnOperand],
    xs: Sequence[EqnOperand],
    length: int,
    reverse: bool,
    n_ys: int,
    reads: Sequence[EqnOperand] = (),
) -> tuple[EqnOperand, ...] | None:
    """Emit a sequential loop kernel running ``jaxpr`` ``length`` times (scan semantics);
    the outputs when a carry lives in a donated buffer, else None."""
    lw = ctx.lowerer
    donated = _donated_carries(ctx, [*reads, *const_ins, *xs], init)
    kb = ctx.kernel("scan" if ctx.prim == "scan" else "while")
    ncar = len(init)
    carries = [donated.get(k) or ctx.out(k) for k in range(ncar)]
    ys = [ctx.out(ncar + j) for j in range(n_ys)]
    init = [donated.get(k) or v for k, v in enumerate(init)]
    result = (*carries, *ys) if donated else None
    for c, v in zip(carries, init, strict=True):
        if not _same_storage(c, v):
            lw.copy_into(kb, c, v)
    if length == 0:
        return result
    (t,) = kb.fresh_vars(1, "t")
    pos: Expr = Binary("-", lit(length - 1), t) if reverse else t
    x_views: list[EqnOperand] = []
    for x in xs:
        if isinstance(x, Lit):
            x_views.append(x.reshaped(x.shape[1:]))
        else:
            x_views.append(x.view(x.shape[1:], _prepend(pos)))
    body: list[Stmt] = []
    sink = NestedSink(kb, body)
    with lw.nested(sink):
        outs = lw.lower_operands(
            jaxpr,
            [lw.const_operand(c) for c in consts],
            [*const_ins, *carries, *x_views],
            pinned=jaxpr.invars[: len(const_ins)],
        )
        for y, v in zip(ys, outs[ncar:], strict=True):
            lw.copy_into(sink, y.view(y.shape[1:], _prepend(pos)), v)
        new = list(outs[:ncar])
        names = {c.ref.name for c in carries}
        for k, v in enumerate(new):
            if _same_storage(carries[k], v):
                continue
            if isinstance(v, TensorInfo) and v.ref.name in names:
                snap = TensorInfo(sink.local(v.dtype, v.shape, "snap"), v.shape, v.dtype)
                lw.copy_into(sink, snap, v)
                new[k] = snap
        for c, v in zip(carries, new, strict=True):
            if not _same_storage(c, v):
                lw.copy_into(sink, c, v)
    kb.emit(For(t.name, IntLit(0), lit(length), tuple(body), seq=True))
    return result


# Note [Donated carries]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# A scan whose carry starts as an input the ``jit`` donates (``donate_argnums``) runs in
# that input's buffer on XLA: the loop's carry aliases it, and a ``dynamic_update_slice``
# or ``.at[i].set`` of the carry in the body updates it in place. Lowered as before, the
# carry output was first a copy of the whole input: a scan writing 256 rows of a donated
# 1024-row fp32 buffer was charged 8.4 MB (the whole buffer read and written) against the
# 2.1 MB its rows move (4x). A carry whose initial value is a donated input, read by
# nothing else (not another carry, a constant or an ``xs`` of the scan, nor a later
# equation: `take_donated`), is handed the input's buffer by an inplace kernel, and the
# carry lives there; the body's update of it is then in place (`reusable`: a whole temp no
# later equation reads), and the scan's output is that temp.


def _donated_carries(ctx: EqnCtx, others: Sequence[EqnOperand], init: Sequence[EqnOperand]
                     ) -> dict[int, TensorInfo]:
    """The carries that start in a donated input's buffer (Note [Donated carries])."""
    names = [v.ref.name for v in (*others, *init) if isinstance(v, TensorInfo)]
    out: dict[int, TensorInfo] = {}
    for k, v in enumerate(init):
        if isinstance(v, TensorInfo) and names.count(v.ref.name) == 1:
            got = ctx.lowerer.take_donated(v)
            if got is not None:
                out[k] = got
    return out


def _prepend(pos: Expr) -> IndexMap:
    """The index map of ``x[pos]`` (the slice of a stacked tensor at one step)."""

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return (pos, *idx)

    return index_map


@LOWERINGS.register("scan")
def _scan(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    p = ctx.params
    closed = p["jaxpr"]
    nc, ncar = int(p["num_consts"]), int(p["num_carry"])
    n_ys = len(ctx.eqn.outvars) - ncar
    return _loop(
        ctx,
        closed.jaxpr,
        closed.consts,
        ctx.ins[:nc],
        ctx.ins[nc : nc + ncar],
        ctx.ins[nc + ncar :],
        int(p["length"]),
        bool(p["reverse"]),
        n_ys,
    )


@LOWERINGS.register("while")
def _while(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    p = ctx.params
    cn, bn = int(p["cond_nconsts"]), int(p["body_nconsts"])
    cond_consts, body_consts, init = ctx.ins[:cn], ctx.ins[cn : cn + bn], ctx.ins[cn + bn :]
    body = p["body_jaxpr"]
    trips = static_trip_count(p["cond_jaxpr"], body, cond_consts, init)
    if trips is None:
        raise UnsupportedOpError("while_loop without a static trip count")
    return _loop(ctx, body.jaxpr, body.consts, body_consts, init, (), trips, False, 0,
                 reads=cond_consts)


def _literal_int(x: Any) -> int | None:
    if isinstance(x, Lit) and not isinstance(x.value, bool) and x.shape == ():
        return int(x.value)
    return None


def static_trip_count(
    cond: Any, body: Any, cond_consts: Sequence[EqnOperand], init: Sequence[EqnOperand]
) -> int | None:
    """The trip count of a ``while`` whose condition compares a constant-step counter to a
    constant.

    The condition is one comparison (``<``, ``<=``, ``>``, ``>=``, ``!=``, the counter on
    either side) of a carry that starts at a literal and that the body steps by a nonzero
    integer literal (``i + s``, ``i - s``), against a literal bound, a condition constant
    or a loop-invariant carry (Note [Static trip counts]).

    Returns:
        The number of iterations, or ``None`` when the pattern does not match or the loop
        would not terminate.
    """
    cj, bj = cond.jaxpr, body.jaxpr
    if len(cj.eqns) != 1 or len(cj.outvars) != 1 or cj.eqns[0].outvars[0] is not cj.outvars[0]:
        return None
    eqn = cj.eqns[0]
    op = eqn.primitive.name
    if op not in ("lt", "le", "gt", "ge", "ne"):
        return None
    a, b = eqn.invars
    n_cc = len(cond_consts)
    carries = cj.invars[n_cc:]
    if not (is_var(a) and a in carries):
        a, b = b, a
        op = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "ne": "ne"}[op]
    if not (is_var(a) and a in carries):
        return None
    k = carries.index(a)
    start = _literal_int(init[k])
    bound = _bound_value(b, cj, cond_consts, carries, init, bj)
    step = _step(bj, k)
    if start is None or bound is None or step is None:
        return None
    return trip_count(op, start, bound, step)


def trip_count(op: str, start: int, bound: int, step: int) -> int | None:
    """Iterations of ``i = start; while i OP bound: i += step`` (``None``: endless).

    Note [Static trip counts]: the loop runs while the comparison holds; a loop whose
    condition holds at the start and that steps away from its bound never ends (``None``,
    uncovered: XLA would spin too).

    >>> trip_count("lt", 0, 5, 1), trip_count("le", 1, 6, 2), trip_count("gt", 4, 0, -1)
    (5, 3, 4)
    >>> trip_count("ge", 3, 0, -2), trip_count("ne", 0, 6, 2), trip_count("lt", 7, 5, 1)
    (2, 3, 0)
    >>> trip_count("ne", 0, 5, 2) is None, trip_count("lt", 0, 5, -1) is None
    (True, True)
    """
    if op == "ne":
        span = bound - start
        return span // step if span % step == 0 and span // step >= 0 else None
    holds = {"lt": start < bound, "le": start <= bound, "gt": start > bound, "ge": start >= bound}
    if not holds[op]:
        return 0
    if (op in ("lt", "le")) != (step > 0):
        return None
    span = abs(bound - start) + (1 if op in ("le", "ge") else 0)
    return -(-span // abs(step))


def _bound_value(
    b: Any,
    cj: Any,
    cond_consts: Sequence[EqnOperand],
    carries: Sequence[Any],
    init: Sequence[EqnOperand],
    bj: Any,
) -> int | None:
    if not is_var(b):
        return int(b.val)
    n_cc = len(cond_consts)
    if b in cj.invars[:n_cc]:
        return _literal_int(cond_consts[cj.invars.index(b)])
    if b in carries:
        j = list(carries).index(b)
        n_bc = len(bj.invars) - len(carries)
        passthrough = bj.outvars[j] is bj.invars[n_bc + j]
        return _literal_int(init[j]) if passthrough else None
    return None


def _step(bj: Any, k: int) -> int | None:
    """``s`` if body output ``k`` is ``carry_k + s`` or ``carry_k - (-s)`` (``s != 0``)."""
    n_bc = len(bj.invars) - len(bj.outvars)
    carry = bj.invars[n_bc + k]
    out = bj.outvars[k]
    for eqn in bj.eqns:
        if eqn.outvars[0] is not out or eqn.primitive.name not in ("add", "sub"):
            continue
        x, y = eqn.invars
        if eqn.primitive.name == "add" and not is_var(x):
            x, y = y, x
        if x is not carry or is_var(y):
            return None
        value = y.val
        if not float(value).is_integer() or int(value) == 0:
            return None
        return int(value) if eqn.primitive.name == "add" else -int(value)
    return None


@LOWERINGS.register("cond")
def _cond(ctx: EqnCtx) -> tuple[EqnOperand, ...] | None:
    branches = ctx.params["branches"]
    index, ops = ctx.ins[0], ctx.ins[1:]
    lw = ctx.lowerer
    n = len(branches)
    if isinstance(index, Lit):
        k = min(max(int(index.value), 0), n - 1)
        br = branches[k]
        return tuple(lw.lower_operands(br.jaxpr, [lw.const_operand(c) for c in br.consts], ops))
    pred = Cast(DType.I64, read(index, [])) if index.dtype == DType.BOOL else read(index, [])
    n_out = len(ctx.eqn.outvars)
    if ctx.nested:
        sink = ctx.kernel("cond")
        outs = [ctx.out(k) for k in range(n_out)]
        for k, br in enumerate(branches):
            stmts: list[Stmt] = []
            inner = NestedSink(sink, stmts)
            with lw.nested(inner):
                res = lw.lower_operands(br.jaxpr, [lw.const_operand(c) for c in br.consts], ops)
                for o, v in zip(outs, res, strict=True):
                    if not _same_storage(o, v):
                        lw.copy_into(inner, o, v)
            if stmts:
                sink.emit(If(_branch_cond(pred, k, n), tuple(stmts)))
        return None
    outs = [ctx.out(k) for k in range(n_out)]
    label = lw.fresh("cond")
    kernels: list[tuple[str, ...]] = []
    for k, br in enumerate(branches):
        before = len(lw.pb.kernel_names())
        jaxpr = br.jaxpr
        dest: dict[Any, TensorInfo] = {}
        for iv, o in zip(jaxpr.outvars, outs, strict=True):
            if is_var(iv) and iv not in jaxpr.invars and iv not in dest:
                dest[iv] = o
        with lw.guarded(_branch_cond(pred, k, n)):
            res = lw.lower_operands(jaxpr, [lw.const_operand(c) for c in br.consts], ops, dest=dest)
            for o, v in zip(outs, res, strict=True):
                if not _same_storage(o, v):
                    kb = lw.pb.kernel(f"{label}_b{k}_out")
                    lw.copy_into(kb, o, v)
                    lw.finish_kernel(kb)
        kernels.append(tuple(lw.pb.kernel_names()[before:]))
    name = index.ref.name if isinstance(index, TensorInfo) else str(index)
    lw.cond_regions.append(CondRegion(label, name, tuple(kernels)))
    lw.notes.append(
        f"{label}: {n} branches lowered under value-dependent guards; a lower bound counts "
        "the cheapest branch (see cond_regions)"
    )
    return tuple(outs)


TARGET_PLATFORMS = ("cuda", "gpu")
"""Platform names of the hardware SOLAR bounds (GPUs), for ``platform_index``."""


@LOWERINGS.register("platform_index")
def _platform_index(ctx: EqnCtx) -> tuple[EqnOperand, ...]:
    """The branch a platform-dependent ``cond`` takes on a GPU: a literal, so the cond
    inlines that branch (``jnp.diagonal`` picks a Mosaic or a default implementation)."""
    platforms = ctx.params["platforms"]
    for k, names in enumerate(platforms):
        if names is None or any(p in TARGET_PLATFORMS for p in names):
            return (Lit(k, ctx.out_dtype(0)),)
    raise UnsupportedOpError(f"no branch for a GPU among platforms {platforms}")


def _branch_cond(pred: Expr, k: int, n: int) -> Expr:
    """The predicate of branch ``k`` of ``n`` (the index is clamped, as lax.switch does)."""
    if k == 0:
        return Binary("<=", pred, IntLit(0))
    if k == n - 1:
        return Binary(">=", pred, lit(k))
    return Binary("==", pred, lit(k))
