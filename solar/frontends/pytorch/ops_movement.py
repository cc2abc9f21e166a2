"""Lowerings of view ops: no kernel, only index maps (registry.py "Views").

Contract: each lowering returns `TensorInfo` views of its input whose index maps
send view indices to input indices; shapes come from the captured outputs
(`OpCall.out_shapes`), so ``-1`` sizes and clamped slice ends need no re-derivation.
Reshapes map through the row-major linear index, grouped so that plain splits and
merges of dims stay affine (``//``/``%`` by constants appear only inside a group).

Note [Constant-last index spelling]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The index arithmetic here is not the kit's `iadd`/`imul`/`reshape_map`, on purpose: the
PyTorch view maps spell a scaled index with the constant last (``o0 * 3 + o1``) where the
kit puts it first (``3 * o0 + o1``), and they fold only Python ints (``2 + 8`` written by
two selects stays as written). The IR text is hashed into reports, which must not change
when code moves, so these helpers (and the kit's `iadd_const_last`/`imul_const_last`)
keep their spelling and say so in their names; the padding emitter and the im2col
lowerings (`solar.frontends.kit.emit.pad`, ops_misc.py) use them for the same reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from solar.frontends.kit import (
    IndexMap,
    TensorInfo,
    UnsupportedOpError,
    iadd_const_last,
    imul_const_last,
)
from solar.frontends.pytorch.lowering_utils import copy_kernel, norm_dim
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, LoweringFn, OpCall
from solar.ir import Binary, Expr, IntLit

__all__ = ["idiv", "imod", "reshape_map_const_last"]


def idiv(a: Expr, k: int) -> Expr:
    """``a // k`` (``k >= 1``)."""
    return a if k == 1 else Binary("//", a, IntLit(k))


def imod(a: Expr, k: int) -> Expr:
    """``a % k`` (``k >= 1``)."""
    return IntLit(0) if k == 1 else Binary("%", a, IntLit(k))


def reshape_map_const_last(in_shape: Sequence[int], out_shape: Sequence[int]) -> IndexMap:
    """Index map of a row-major reshape from ``in_shape`` to ``out_shape``.

    Note [Constant-last index spelling]: ``o0 * 3 + o1``. Size-1 dims are dropped; the
    remaining dims are grouped where the running products agree, and each group is
    linearised and delinearised on its own.
    """
    ins = [(k, d) for k, d in enumerate(in_shape) if d != 1]
    outs = [(k, d) for k, d in enumerate(out_shape) if d != 1]
    groups: list[tuple[list[tuple[int, int]], list[tuple[int, int]]]] = []
    i = j = 0
    while i < len(ins) or j < len(outs):
        gi, gj = [ins[i]], [outs[j]]
        pi, pj = ins[i][1], outs[j][1]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                gi.append(ins[i])
                pi *= ins[i][1]
                i += 1
            else:
                gj.append(outs[j])
                pj *= outs[j][1]
                j += 1
        groups.append((gi, gj))

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        res: list[Expr] = [IntLit(0)] * len(in_shape)
        for gi, gj in groups:
            lin: Expr = IntLit(0)
            stride = 1
            for _, d in gj:
                stride *= d
            for k, d in gj:
                stride //= d
                lin = iadd_const_last(lin, imul_const_last(idx[k], stride))
            if len(gi) == 1:
                res[gi[0][0]] = lin
                continue
            inner = 1
            for pos, (k, d) in enumerate(reversed(gi)):
                part = idiv(lin, inner)
                res[k] = part if pos == len(gi) - 1 else imod(part, d)
                inner *= d
        return tuple(res)

    return index_map


def _x(call: OpCall) -> TensorInfo:
    x = call.args[0]
    if not isinstance(x, TensorInfo):
        raise UnsupportedOpError(f"{call.target}: expected a tensor")
    return x


def _shape(call: OpCall, k: int = 0) -> tuple[int, ...]:
    shape = call.out_shapes[k] if k < len(call.out_shapes) else None
    if shape is not None:
        return shape
    raise UnsupportedOpError(f"{call.target}: output shape unknown")


@LOWERINGS.register(
    "aten.view",
    "aten._unsafe_view",
    "aten.reshape",
    "aten._reshape_alias",
    "aten.squeeze",
    "aten.unsqueeze",
    "aten.flatten",
    "aten.view_as",
    "aten.unflatten",
)
def _reshape(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    shape = _shape(call)
    if tuple(shape) == x.shape:
        return (x,)
    if call.target.startswith("aten.view.dtype"):
        raise UnsupportedOpError("bit-casting views are not representable")
    return (x.view(shape, reshape_map_const_last(x.shape, shape)),)


@LOWERINGS.register(
    "aten.alias",
    "aten.detach",
    "aten.lift_fresh",
    "aten.resolve_conj",
    "aten.resolve_neg",
    "aten.positive",
)
def _identity(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    return (_x(call),)


@LOWERINGS.register("aten.permute")
def _permute(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    perm = [norm_dim(d, x.rank) for d in call.arg(1, "dims")]
    return (_permuted(x, perm),)


def _permuted(x: TensorInfo, perm: Sequence[int]) -> TensorInfo:
    shape = [x.shape[p] for p in perm]

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        res: list[Expr] = [IntLit(0)] * len(perm)
        for k, p in enumerate(perm):
            res[p] = idx[k]
        return tuple(res)

    return x.view(shape, index_map)


@LOWERINGS.register("aten.transpose", "aten.swapaxes", "aten.swapdims")
def _transpose(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    if x.rank < 2:
        return (x,)
    d0 = norm_dim(call.arg(1, "dim0"), x.rank)
    d1 = norm_dim(call.arg(2, "dim1"), x.rank)
    perm = list(range(x.rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return (_permuted(x, perm),)


@LOWERINGS.register("aten.t", "aten.numpy_T")
def _t(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    return (x,) if x.rank < 2 else (_permuted(x, list(reversed(range(x.rank)))),)


@LOWERINGS.register("aten.expand", "aten.expand_as", "aten.broadcast_to")
def _expand(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    shape = _shape(call)
    off = len(shape) - x.rank

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return tuple(
            IntLit(0) if d == 1 and shape[off + k] != 1 else idx[off + k]
            for k, d in enumerate(x.shape)
        )

    return (x.view(shape, index_map),)


def _slice_view(x: TensorInfo, dim: int, start: int, step: int, size: int) -> TensorInfo:
    shape = list(x.shape)
    shape[dim] = size

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        res = list(idx)
        res[dim] = iadd_const_last(imul_const_last(idx[dim], step), start)
        return tuple(res)

    return x.view(shape, index_map)


def _clamp_start(start: int | None, size: int) -> int:
    if start is None:
        return 0
    if start < 0:
        start += size
    return min(max(start, 0), size)


@LOWERINGS.register("aten.slice")
def _slice(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    dim = norm_dim(call.arg(1, "dim", 0), x.rank)
    start = _clamp_start(call.arg(2, "start"), x.shape[dim])
    step = call.arg(4, "step", 1) or 1
    out = _shape(call)
    return (_slice_view(x, dim, start, step, out[dim]),)


@LOWERINGS.register("aten.narrow")
def _narrow(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    dim = norm_dim(call.arg(1, "dim"), x.rank)
    start = _clamp_start(call.arg(2, "start"), x.shape[dim])
    return (_slice_view(x, dim, start, 1, _shape(call)[dim]),)


@LOWERINGS.register("aten.select")
def _select(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    dim = norm_dim(call.arg(1, "dim"), x.rank)
    return (_selected(x, dim, call.arg(2, "index")),)


def _selected(x: TensorInfo, dim: int, index: int) -> TensorInfo:
    if index < 0:
        index += x.shape[dim]
    shape = x.shape[:dim] + x.shape[dim + 1 :]

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        return (*idx[:dim], IntLit(index), *idx[dim:])

    return x.view(shape, index_map)


@LOWERINGS.register("aten.unbind")
def _unbind(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    dim = norm_dim(call.arg(1, "dim", 0), x.rank)
    return tuple(_selected(x, dim, k) for k in range(x.shape[dim]))


@LOWERINGS.register(
    "aten.split",
    "aten.split_with_sizes",
    "aten.unsafe_split",
    "aten.unsafe_split_with_sizes",
    "aten.tensor_split",
    "aten.chunk",
)
def _split(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    dim_pos = 1 if "tensor_split" in call.target or "chunk" in call.target else 2
    dim = norm_dim(call.arg(dim_pos, "dim", 0), x.rank)
    views, start = [], 0
    for shape in call.out_shapes:
        if shape is None:
            raise UnsupportedOpError(f"{call.target}: non-tensor output")
        views.append(_slice_view(x, dim, start, 1, shape[dim]))
        start += shape[dim]
    return tuple(views)


@LOWERINGS.register("aten.diagonal")
def _diagonal(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    offset = call.arg(1, "offset", 0)
    d1 = norm_dim(call.arg(2, "dim1", 0), x.rank)
    d2 = norm_dim(call.arg(3, "dim2", 1), x.rank)
    rest = [k for k in range(x.rank) if k not in (d1, d2)]
    shape = _shape(call)

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        res: list[Expr] = [IntLit(0)] * x.rank
        for pos, k in enumerate(rest):
            res[k] = idx[pos]
        d = idx[len(rest)]
        res[d1] = iadd_const_last(d, max(-offset, 0))
        res[d2] = iadd_const_last(d, max(offset, 0))
        return tuple(res)

    return (x.view(shape, index_map),)


@LOWERINGS.register("aten.unfold")
def _unfold(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    dim = norm_dim(call.arg(1, "dimension"), x.rank)
    step = call.arg(3, "step")
    shape = _shape(call)

    def index_map(idx: tuple[Expr, ...]) -> tuple[Expr, ...]:
        res = list(idx[: x.rank])
        res[dim] = (
            iadd_const_last(imul_const_last(idx[dim], step), idx[x.rank]) if x.rank else idx[0]
        )
        return tuple(res)

    return (x.view(shape, index_map),)


@LOWERINGS.register("aten.movedim")
def _movedim(ctx: LowerCtx, call: OpCall) -> tuple[TensorInfo, ...]:
    x = _x(call)
    src = call.arg(1, "source")
    dst = call.arg(2, "destination")
    src = [norm_dim(s, x.rank) for s in ([src] if isinstance(src, int) else src)]
    dst = [norm_dim(d, x.rank) for d in ([dst] if isinstance(dst, int) else dst)]
    perm = [-1] * x.rank
    for s, d in zip(src, dst, strict=True):
        perm[d] = s
    rest = iter(k for k in range(x.rank) if k not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return (_permuted(x, perm),)


def _copy_variant(view_target: str) -> LoweringFn:
    """``<view>_copy`` ops: the view, materialised by one copy kernel."""

    def lower(ctx: LowerCtx, call: OpCall) -> None:
        view_fn = LOWERINGS.find(view_target)
        assert view_fn is not None
        views = view_fn(ctx, replace(call, target=view_target))
        assert views is not None
        for view, out in zip(views, call.outputs, strict=True):
            if out is not None and view is not None:
                copy_kernel(ctx, view, out)

    return lower


for _view in (
    "view",
    "_unsafe_view",
    "squeeze",
    "unsqueeze",
    "alias",
    "detach",
    "permute",
    "transpose",
    "t",
    "expand",
    "slice",
    "select",
    "split",
    "split_with_sizes",
    "unbind",
    "diagonal",
    "unfold",
    "_reshape_alias",
    "narrow",
):
    LOWERINGS.register(f"aten.{_view}_copy")(_copy_variant(f"aten.{_view}.default"))
