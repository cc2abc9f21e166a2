"""Lowerings of indexing and joining ops: cat/stack, index/index_select/gather/embedding,
and the scatter family (scatter, scatter_add, scatter_reduce, index_put, index_add...).

Contract: one kernel per call. Reads through index tensors are indirect accesses
(``W[idx[b, s], d]``); scatter-like ops write through them (``out[idx[i], j] += src[i, j]``).
A functional scatter first copies ``self`` into the output in the same kernel; when
the output *is* ``self`` (the in-place variant, see driver.INPLACE_PARTIAL_OPS) only the
scattered elements are written, as eager does. ``scatter_reduce`` without ``self``
starts each target from the reduction's identity (``-inf`` for ``amax``...); its
``mean`` keeps a sum and a count per target (Note [Scatter mean division]). Negative
index values are not wrapped (models index with non-negative tensors); boolean-mask
indexing compacts (``ops_mask_index.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from solar.frontends.kit import (
    Sink,
    TensorInfo,
    UnsupportedOpError,
    cast,
    nest,
    reduce_identity,
)
from solar.frontends.kit.emit.gather import (
    GatherDims,
    ScatterDims,
    StartReader,
    emit_gather,
    emit_scatter,
)
from solar.frontends.kit.emit.reduce import Reader
from solar.frontends.pytorch.lowering_utils import (
    bcast_index,
    binop,
    fn,
    norm_dim,
    operand,
    out0,
    same_value,
    scalar_lit,
    tensor_arg,
)
from solar.frontends.pytorch.ops_mask_index import (
    is_mask_index,
    lower_mask_index,
    lower_mask_index_put,
)
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Assign, DType, Expr, If, IntLit, Name, Reduce, ReduceOp, Stmt, lit

__all__ = ["advanced_index", "wrap_negative"]

IndexFn = Callable[[Sequence[Expr]], list[Expr]]


def _nest(
    kb: Sink,
    ctx: LowerCtx,
    shape: Sequence[int],
    body: Callable[[tuple[Name, ...]], list[Stmt]],
) -> list[Stmt]:
    idx = ctx.vars(kb, len(shape))
    stmts = body(idx)
    return nest(list(zip(idx, shape, strict=True)), stmts)


@LOWERINGS.register("aten.cat", "aten.concat", "aten.concatenate")
def _cat(ctx: LowerCtx, call: OpCall) -> None:
    out = out0(call)
    dim = norm_dim(call.arg(1, "dim", 0), out.rank)
    kb = ctx.kernel()
    offset = 0
    for t in call.args[0]:
        if not isinstance(t, TensorInfo):
            raise UnsupportedOpError("cat of non-tensors")
        if t.rank == 1 and t.shape[0] == 0 and out.rank != 1:
            continue  # legacy empty tensors are skipped by torch.cat
        if t.numel == 0:
            continue

        def body(idx: tuple[Name, ...], t: TensorInfo = t, off: int = offset) -> list[Stmt]:
            oidx: list[Expr] = list(idx)
            oidx[dim] = binop("+", idx[dim], IntLit(off)) if off else idx[dim]
            return [Assign(ctx.write(out, oidx), cast(ctx.read(t, idx), t.dtype, out.dtype))]

        kb.emit(*_nest(kb, ctx, t.shape, body))
        offset += t.shape[dim]


@LOWERINGS.register("aten.stack")
def _stack(ctx: LowerCtx, call: OpCall) -> None:
    out = out0(call)
    dim = norm_dim(call.arg(1, "dim", 0), out.rank)
    kb = ctx.kernel()
    for k, t in enumerate(call.args[0]):
        if not isinstance(t, TensorInfo):
            raise UnsupportedOpError("stack of non-tensors")

        def body(idx: tuple[Name, ...], t: TensorInfo = t, k: int = k) -> list[Stmt]:
            oidx: list[Expr] = [*idx[:dim], IntLit(k), *idx[dim:]]
            return [Assign(ctx.write(out, oidx), cast(ctx.read(t, idx), t.dtype, out.dtype))]

        kb.emit(*_nest(kb, ctx, t.shape, body))


def _check_index(t: TensorInfo) -> None:
    if t.dtype not in (DType.I64, DType.I32, DType.I8):
        raise UnsupportedOpError("boolean-mask indexing has a data-dependent shape")


def wrap_negative(index: Expr, extent: int) -> Expr:
    """``index`` with negative values counted from the end (``-1`` is ``extent - 1``), as
    advanced indexing reads them (transformers indexes ``input_ids[:, [-1, 0]]``).

    Index arithmetic inside a subscript costs no FLOPs (solar.einsum.cost).

    >>> from solar.ir import print_expr
    >>> print_expr(wrap_negative(Name("i"), 4))
    'select(i < 0, i + 4, i)'
    """
    return fn("select", binop("<", index, IntLit(0)), binop("+", index, IntLit(extent)), index)


@dataclass(frozen=True, slots=True)
class _Advanced:
    """The layout of ``x[indices]`` (NumPy advanced indexing): the indexed dims ``pos``
    and their index tensors, the broadcast index shape ``bshape``, the sliced dims
    before and after it in the result, and the result shape."""

    pos: list[int]
    tensors: list[TensorInfo]
    bshape: list[int]
    before: list[int]
    after: list[int]
    result: tuple[int, ...]

    @staticmethod
    def of(shape: Sequence[int], indices: Sequence[TensorInfo | None]) -> _Advanced:
        pos = [k for k, t in enumerate(indices) if t is not None]
        if not pos:
            raise UnsupportedOpError("index with no index tensors")
        tensors = [t for t in indices if t is not None]
        for t in tensors:
            _check_index(t)
        brank = max(t.rank for t in tensors)
        bshape = [1] * brank
        for t in tensors:
            for k, d in enumerate(t.shape):
                j = brank - t.rank + k
                bshape[j] = d if bshape[j] == 1 else bshape[j]
        rest = [k for k in range(len(shape)) if k not in pos]
        if pos == list(range(pos[0], pos[-1] + 1)):  # adjacent: the index dims stay in place
            before = [k for k in rest if k < pos[0]]
            after = [k for k in rest if k > pos[-1]]
        else:
            before, after = [], rest
        result = [shape[k] for k in before] + bshape + [shape[k] for k in after]
        return _Advanced(pos, tensors, bshape, before, after, tuple(result))

    def start(self, shape: Sequence[int]) -> StartReader:
        """Entry ``j``: index tensor ``j`` at the broadcast point (`wrap_negative`)."""

        def read(batch: Sequence[Expr], j: int) -> Expr:
            t = self.tensors[j]
            at = LowerCtx.read(t, bcast_index(t.shape, self.bshape, batch))
            return wrap_negative(at, shape[self.pos[j]])

        return read

    def scatter_dims(self) -> ScatterDims:
        """``x[indices] = v`` as a scatter: the sliced dims are the update's window."""
        nb, brank = len(self.before), len(self.bshape)
        window = (*range(nb), *range(nb + brank, nb + brank + len(self.after)))
        return ScatterDims(window, frozenset(self.pos), tuple(self.pos))


def advanced_index(
    shape: Sequence[int], indices: Sequence[TensorInfo | None]
) -> tuple[tuple[int, ...], IndexFn]:
    """Result shape and index map of ``x[indices]`` (NumPy advanced indexing rules;
    negative indices count from the end, `wrap_negative`).

    Returns:
        The result shape and a function from result indices to ``x`` indices (with
        indirect accesses of the index tensors).
    """
    adv = _Advanced.of(shape, indices)
    start = adv.start(shape)

    def index_fn(idx: Sequence[Expr]) -> list[Expr]:
        out: list[Expr] = [IntLit(0)] * len(shape)
        nb = len(adv.before)
        bidx = list(idx[nb : nb + len(adv.bshape)])
        for k in adv.before:
            out[k] = idx[adv.before.index(k)]
        for j, k in enumerate(adv.after):
            out[k] = idx[nb + len(adv.bshape) + j]
        for j, k in enumerate(adv.pos):
            out[k] = start(bidx, j)
        return out

    return adv.result, index_fn


@LOWERINGS.register("aten.index", "aten._unsafe_index")
def _index(ctx: LowerCtx, call: OpCall) -> None:
    if is_mask_index(call.arg(1, "indices")):
        return lower_mask_index(ctx, call)
    x, out = tensor_arg(call, 0, "self"), out0(call)
    _, index_fn = advanced_index(x.shape, call.arg(1, "indices"))
    kb = ctx.kernel()
    kb.emit(
        *_nest(
            kb,
            ctx,
            out.shape,
            lambda idx: [
                Assign(ctx.write(out, idx), cast(ctx.read(x, index_fn(idx)), x.dtype, out.dtype))
            ],
        )
    )


def _dim_start(index: TensorInfo) -> StartReader:
    """The start of ``dim`` at batch point ``b``: ``index[b]`` (``index[]`` for a 0-d index)."""
    return lambda batch, _j: index.at(batch if index.rank else [])


def _along(rank: int, dim: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The batching dims of an op that indexes ``dim`` per element (``gather``,
    ``scatter``): every other dim, batched with itself."""
    others = tuple(k for k in range(rank) if k != dim)
    return others, others


@LOWERINGS.register("aten.index_select")
def _index_select(ctx: LowerCtx, call: OpCall) -> None:
    x, index, out = tensor_arg(call, 0, "self"), tensor_arg(call, 2, "index"), out0(call)
    dim = norm_dim(call.arg(1, "dim"), x.rank)
    offset = tuple(k for k in range(x.rank) if k != dim)
    sizes = tuple(1 if k == dim else n for k, n in enumerate(x.shape))
    dims = GatherDims(offset, frozenset({dim} if x.rank else ()), (dim,) if x.rank else (), sizes)
    emit_gather(ctx.kernel(), x.shape, x.at, _dim_start(index), dims, out.shape, out.at)


@LOWERINGS.register("aten.gather")
def _gather(ctx: LowerCtx, call: OpCall) -> None:
    x, index, out = tensor_arg(call, 0, "self"), tensor_arg(call, 2, "index"), out0(call)
    dim = norm_dim(call.arg(1, "dim"), x.rank)
    batching, positions = _along(x.rank, dim)
    dims = GatherDims((), frozenset({dim}), (dim,), (1,) * x.rank, batching, positions)
    emit_gather(ctx.kernel(), x.shape, x.at, _dim_start(index), dims, out.shape, out.at)


@LOWERINGS.register("aten.embedding")
def _embedding(ctx: LowerCtx, call: OpCall) -> None:
    w, ids, out = tensor_arg(call, 0, "weight"), tensor_arg(call, 1, "indices"), out0(call)
    dims = GatherDims((ids.rank,), frozenset({0}), (0,), (1, *w.shape[1:]))
    emit_gather(ctx.kernel(), w.shape, w.at, _dim_start(ids), dims, out.shape, out.at)


# -- scatter family --------------------------------------------------------------------

_REDUCE: dict[str, ReduceOp] = {
    "sum": "+", "add": "+", "prod": "*", "multiply": "*", "amax": "max", "amin": "min",
}  # fmt: skip


def _start(ctx: LowerCtx, call: OpCall, x: TensorInfo, out: TensorInfo) -> Sink:
    """The kernel, beginning with ``out = self`` unless the op runs in place."""
    kb = ctx.kernel()
    if not same_value(x, out):
        kb.emit(
            *_nest(
                kb,
                ctx,
                out.shape,
                lambda idx: [
                    Assign(ctx.write(out, idx), cast(ctx.read(x, idx), x.dtype, out.dtype))
                ],
            )
        )
    return kb


def _copy(x: TensorInfo, out: TensorInfo) -> Reader | None:
    """``out = self`` first, unless the op runs in place."""
    return None if same_value(x, out) else (lambda idx: cast(x.at(idx), x.dtype, out.dtype))


@LOWERINGS.register("aten.scatter", "aten.scatter_add", "aten.scatter_reduce")
def _scatter(ctx: LowerCtx, call: OpCall) -> None:
    x, index, out = tensor_arg(call, 0, "self"), tensor_arg(call, 2, "index"), out0(call)
    dim = norm_dim(call.arg(1, "dim"), x.rank)
    src = call.arg(3, "src" if "value" not in call.target else "value")
    include_self = call.arg(5, "include_self", True)
    if "scatter_add" in call.target:
        op: ReduceOp | None = "+"
    else:
        reduce = call.arg(4, "reduce")
        if reduce == "mean":
            _scatter_mean(ctx, call, x, index, out, dim, include_self)
            return
        op = None if reduce is None else _REDUCE.get(reduce)
        if reduce is not None and op is None:
            raise UnsupportedOpError(f"scatter reduce={reduce!r}")
    batching, positions = _along(x.rank, dim)
    dims = ScatterDims((), frozenset({dim}), (dim,), batching, positions)
    kb = ctx.kernel()
    start, copy = _dim_start(index), _copy(x, out)

    def update(idx: Sequence[Expr]) -> Expr:
        if isinstance(src, TensorInfo):
            return cast(src.at(idx), src.dtype, out.dtype)
        return operand(src, idx, index.shape, out.dtype)

    if not include_self and op is not None:
        init = reduce_identity(op, out.dtype)
        emit_scatter(
            kb, out.shape, out.at, start, dims, index.shape, lambda _i: init, out.dtype, None,
            copy=copy, hint="i",
        )  # fmt: skip
        copy = None
    emit_scatter(
        kb, out.shape, out.at, start, dims, index.shape, update, out.dtype, op, copy=copy, hint="i"
    )


@LOWERINGS.register("aten.index_put", "aten._index_put_impl")
def _index_put(ctx: LowerCtx, call: OpCall) -> None:
    """``x[indices] = values`` (``+=`` with ``accumulate``): a scatter whose window is the
    sliced dims and whose starts are the (broadcast) index tensors."""
    x, out = tensor_arg(call, 0, "self"), out0(call)
    values = call.arg(2, "values")
    accumulate = bool(call.arg(3, "accumulate", False))
    if is_mask_index(call.arg(1, "indices")):
        return lower_mask_index_put(ctx, call, accumulate=accumulate)
    adv = _Advanced.of(x.shape, call.arg(1, "indices"))
    emit_scatter(
        ctx.kernel(), out.shape, out.at, adv.start(x.shape), adv.scatter_dims(), adv.result,
        lambda idx: operand(values, idx, adv.result, out.dtype), out.dtype,
        "+" if accumulate else None, copy=_copy(x, out), hint="i",
    )  # fmt: skip
    return None


def _dim_scatter(op: ReduceOp | None, fill: bool = False) -> Callable[[LowerCtx, OpCall], None]:
    """``index_add``/``index_copy``/``index_fill``: slices of ``dim`` at ``index``'s
    positions take ``source`` (times ``alpha``) or the fill value."""

    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, index, out = tensor_arg(call, 0, "self"), tensor_arg(call, 2, "index"), out0(call)
        dim = norm_dim(call.arg(1, "dim"), x.rank)
        src = call.arg(3, "value" if fill else "source")
        alpha = call.arg(4, "alpha", 1)
        shape = list(x.shape)
        if x.rank:
            shape[dim] = index.numel
        window = tuple(k for k in range(x.rank) if k != dim)
        dims = ScatterDims(window, frozenset({dim} if x.rank else ()), (dim,) if x.rank else ())

        def update(idx: Sequence[Expr]) -> Expr:
            if fill or not isinstance(src, TensorInfo):
                value = operand(src, idx, shape, out.dtype)
            else:
                value = cast(src.at(idx if src.rank else []), src.dtype, out.dtype)
            return value if alpha == 1 else binop("*", value, scalar_lit(alpha, out.dtype))

        emit_scatter(
            ctx.kernel(), out.shape, out.at, _dim_start(index), dims, shape, update, out.dtype, op,
            copy=_copy(x, out), hint="i",
        )  # fmt: skip

    return lower


LOWERINGS.register("aten.index_add")(_dim_scatter("+"))
LOWERINGS.register("aten.index_copy")(_dim_scatter(None))
LOWERINGS.register("aten.index_fill")(_dim_scatter(None, fill=True))


def _scatter_mean(
    ctx: LowerCtx,
    call: OpCall,
    x: TensorInfo,
    index: TensorInfo,
    out: TensorInfo,
    dim: int,
    include_self: bool,
) -> None:
    """``scatter_reduce(.., "mean", include_self)``: per target the sum and a count
    (kernel-locals; the count starts at 1 where ``self`` is included), then each target
    divided by its count (floor division for integers, as eager's ``div_``). The sum is
    `emit_scatter`'s, which counts and flags each target in the same loop nest.

    Note [Scatter mean division]: which elements are targets depends on the index
    values, so the division runs under a value-dependent guard on a local ``hit`` flag
    (set at each target): the bound charges no division (at least one per distinct
    target is executed, a number the program does not fix) and no comparison (reading a
    flag is free), where eager compares and divides every element of the output."""
    src = tensor_arg(call, 3, "src")
    kb = _start(ctx, call, x, out)
    count = kb.local(out.dtype, out.shape, "count")
    hit = kb.local(DType.BOOL, out.shape, "hit")
    kb.emit(
        *_nest(
            kb,
            ctx,
            out.shape,
            lambda idx: [
                Assign(count[idx], scalar_lit(1 if include_self else 0, out.dtype)),
                Assign(hit[idx], lit(False)),
            ],
        )
    )
    batching, positions = _along(x.rank, dim)
    dims = ScatterDims((), frozenset({dim}), (dim,), batching, positions)
    start = _dim_start(index)
    if not include_self:
        zero = scalar_lit(0, out.dtype)
        emit_scatter(
            kb, out.shape, out.at, start, dims, index.shape, lambda _i: zero, out.dtype, None,
            hint="i",
        )  # fmt: skip

    def counted(dst: Sequence[Expr]) -> list[Stmt]:
        at = tuple(dst)
        return [Reduce(count[at], "+", scalar_lit(1, out.dtype)), Assign(hit[at], lit(True))]

    emit_scatter(
        kb, out.shape, out.at, start, dims, index.shape,
        lambda idx: cast(src.at(idx), src.dtype, out.dtype), out.dtype, "+", hint="i",
        also=counted,
    )  # fmt: skip
    div = "/" if out.dtype.is_float else "//"

    def finish(idx: tuple[Name, ...]) -> list[Stmt]:
        dst = ctx.write(out, idx)
        return [If(hit[idx], (Assign(dst, binop(div, dst, count[idx])),))]

    kb.emit(*_nest(kb, ctx, out.shape, finish))
