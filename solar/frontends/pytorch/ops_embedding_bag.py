"""Lowering of ``_embedding_bag``: sums (or means) of gathered rows per bag, one kernel.

Contract: ``(LowerCtx, OpCall) -> None``. ``_embedding_bag(weight, indices, offsets,
scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset, padding_idx)``
with 1-D ``indices`` and ``offsets`` (bag ``b`` holds ``indices[offsets[b] ..
offsets[b + 1]]``, the last bag runs to the end) in ``sum`` or ``mean`` mode, with or
without per-sample weights; ``max`` mode and a ``padding_idx`` are uncovered.

Note [Bag ranges]: a bag's range is data (its offsets), which no affine loop bound
expresses. The kernel does what CUDA's kernel does: it first gives every index its bag,
``offset2bag``: a 1 at each bag start after the first (``marks[offsets[b]] += 1``, a
scatter), then a running sum over the indices (a ``seq`` loop). Every index then adds its
row into its bag's row, ``out[bag[j], d] += weight[indices[j], d]``: ``NI * D`` adds, the
arithmetic of the bags, without comparing any index with any offset. Counts: the
``indices`` and ``offsets`` read exactly, the output written whole, the gathered rows of
``weight`` one row (Note [Gathers], a lower bound); FLOPs ``NI * D`` adds (times two with
per-sample weights), the ``NB`` marks and the ``NI`` steps of the running sum. Mean mode
divides each bag by its size (``offsets[b + 1] - offsets[b]``), an empty bag giving 0.
The three auxiliary outputs (``offset2bag``, ``bag_size``, ``max_indices``) are not
computed: forward programs never read them (training captures differentiate through
``embedding_bag``'s backward, which is not lowered).
"""

from __future__ import annotations

from solar.frontends.kit import TensorInfo, UnsupportedOpError, nest
from solar.frontends.pytorch.lowering_utils import tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Access, Assign, Binary, Call, Cast, DType, Expr, IntLit, Reduce, lit

__all__: list[str] = []

_SUM, _MEAN = 0, 1


@LOWERINGS.register("aten._embedding_bag", "aten._embedding_bag_forward_only")
def _embedding_bag(ctx: LowerCtx, call: OpCall) -> None:
    w, ids, offs = (tensor_arg(call, 0, "weight"), tensor_arg(call, 1, "indices"),
                    tensor_arg(call, 2, "offsets"))
    mode = int(call.arg(4, "mode", _SUM))
    psw = call.arg(6, "per_sample_weights")
    last = bool(call.arg(7, "include_last_offset", False))
    pad = call.arg(8, "padding_idx", -1)
    out = call.outputs[0] if call.outputs else None
    if (mode not in (_SUM, _MEAN) or ids.rank != 1 or offs.rank != 1 or w.rank != 2
            or not isinstance(out, TensorInfo) or (pad is not None and int(pad) >= 0)):
        raise UnsupportedOpError("_embedding_bag: sum/mean of 1-D indices and offsets, no "
                                 "padding_idx")
    n_i, n_b, dim = ids.shape[0], out.shape[0], w.shape[1]
    kb = ctx.kernel("embedding_bag")
    marks = kb.local(DType.I64, (n_i + 1,), "marks")
    bag = kb.local(DType.I64, (n_i,), "bag")
    run = kb.local(DType.I64, (), "run")
    j, b, d, e = kb.fresh_vars(4, "j")
    # offset2bag (Note [Bag ranges])
    kb.emit(*nest([(j, n_i + 1)], [Assign(marks[(j,)], IntLit(0))]))
    start = Cast(DType.I64, offs.at((b,)))
    kb.emit(*nest([(b, 1, n_b)], [Reduce(Access(marks.name, (start,)), "+", IntLit(1))]))
    kb.emit(Assign(run.scalar(), IntLit(0)))
    kb.emit(*nest([(j, n_i)], [Reduce(run.scalar(), "+", marks[(j,)]),
                               Assign(bag[(j,)], run.scalar())], seq=True))
    # the bags' sums
    acc = DType.F32 if out.dtype in (DType.BF16, DType.F16) else out.dtype
    sums = kb.local(acc, (n_b, dim), "sums")
    kb.emit(*nest([(b, n_b), (d, dim)], [Assign(sums[(b, d)], lit(0.0))]))
    row: Expr = Cast(acc, w.at((Cast(DType.I64, ids.at((e,))), d)))
    if isinstance(psw, TensorInfo):
        row = Binary("*", row, Cast(acc, psw.at((e,))))
    kb.emit(*nest([(e, n_i), (d, dim)], [Reduce(Access(sums.name, (bag[(e,)], d)), "+", row)]))
    value: Expr = sums[(b, d)]
    if mode == _MEAN:
        end: Expr = (Cast(DType.I64, offs.at((Binary("+", b, IntLit(1)),))) if last
                     else Call("select", (Binary("<", b, IntLit(n_b - 1)), Cast(
                         DType.I64, offs.at((Call("min", (Binary("+", b, IntLit(1)),
                                                          IntLit(n_b - 1))),))), IntLit(n_i))))
        size = Binary("-", end, Cast(DType.I64, offs.at((b,))))
        value = Call("select", (Binary("==", size, IntLit(0)), lit(0.0),
                                Binary("/", value, Cast(acc, size))))
    kb.emit(*nest([(b, n_b), (d, dim)], [Assign(out.at((b, d)), Cast(out.dtype, value))]))
