"""Lowerings of ATen pooling ops (max/avg, adaptive max/avg, 1-3D): one kernel each.

Contract: ``(LowerCtx, OpCall) -> None``; each call emits one kernel over the pooled
(trailing) dims, looping over every leading dim. Taps that fall into the padding are
skipped by a guard (max pooling pads with -inf, average pooling with zeros), so FLOPs
count real taps only. Output extents come from the declared outputs, so ``ceil_mode``
needs no special casing beyond the guard.

* Max pooling with indices: ``Y max= X[tap]``, then ``I min= flat(tap)`` over the taps
  whose value equals the maximum (torch's "first maximum wins"); ``flat`` is the index
  into the input's pooled plane. Indices are only computed when the output is declared.
* Average pooling divides by torch's divisor: ``divisor_override``, else the window
  clipped to the padded input (``count_include_pad``) or to the input; the divisor is
  a literal when it is the same for every window and an integer expression otherwise.
* Adaptive pooling window ``o`` covers ``[(o*In)//Out, ((o+1)*In + Out - 1)//Out)``:
  a plain ``k``-wide window when ``Out`` divides ``In``, else loop bounds with ``//``.

CPU dispatch (torch 2.13): ``F.max_pool1d/2d`` reach ``max_pool2d_with_indices`` (1D via
unsqueeze), ``F.max_pool3d`` ``max_pool3d_with_indices``; ``F.avg_pool1d/2d`` reach
``avg_pool2d``; ``F.adaptive_avg_pool*`` reach ``_adaptive_avg_pool2d/3d`` (or
``mean.dim`` for output size 1); ``F.adaptive_max_pool*`` ``adaptive_max_pool2d/3d``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from solar.frontends.kit import (
    Aff,
    Nest,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    accumulate_dtype,
    cast,
    expand_param,
    fmax,
    fmin,
    guard,
    iadd,
    imul,
    nest,
)
from solar.frontends.kit.emit import Loop, Window, WindowFn, WindowSpec, pool_nest, window_reduce
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, LoweringFn, OpCall
from solar.ir import Assign, Binary, Expr, If, Reduce, Unary, lit

__all__ = [
    "DivisorFn",
    "adaptive_divisors",
    "adaptive_windows",
    "avg_divisors",
]

_TAPS = ("r", "s", "t")


def _io(call: OpCall, nd: int) -> tuple[TensorInfo, TensorInfo, TensorInfo | None]:
    x = call.arg(0, "self")
    out = call.outputs[0]
    if not isinstance(x, TensorInfo) or out is None or x.rank < nd + 1:
        raise UnsupportedOpError(f"{call.target}: expected a tensor of rank >= {nd + 1}")
    idx = call.outputs[1] if len(call.outputs) > 1 else None
    return x, out, idx


def _emit_max(
    ctx: LowerCtx,
    kb: Sink,
    x: TensorInfo,
    out: TensorInfo,
    indices: TensorInfo | None,
    nd: int,
    windows: WindowFn,
) -> None:
    """``Y = max over the window`` and, if declared, the index of its first maximum."""
    lead = x.rank - nd
    outer = pool_nest(kb, out.shape, nd)
    tgt = ctx.write(out, outer.idx)
    win = windows(kb, outer)
    body = window_reduce(x, outer, win, tgt, "max", Unary("-", lit(float("inf"))))
    if indices is not None:
        itgt = ctx.write(indices, outer.idx)
        plane = x.shape[lead:]
        win = windows(kb, outer)
        flat = Aff(())
        size = 1
        for d in range(nd):
            size *= plane[d]
        step = size
        for d in range(nd):
            step //= plane[d]
            flat = flat.plus(win.pos[d].scaled(step))
        is_max = Binary("==", ctx.read(x, [*outer.idx[:lead], *win.src]), ctx.read(out, outer.idx))
        # The plane size is past every valid index; the window's first maximum wins.
        body += [
            Assign(itgt, lit(size)),
            *nest(win.loops, guard(win.conds, [If(is_max, (Reduce(itgt, "min", flat.expr()),))])),
        ]
    kb.emit(*outer.wrap(body))


def _pool_params(call: OpCall, nd: int, x: TensorInfo) -> tuple[tuple[int, ...], ...]:
    kernel = expand_param(call.arg(1, "kernel_size"), nd, "kernel_size")
    stride = expand_param(call.arg(2, "stride"), nd, "stride", 0)
    stride = tuple(s if s else k for s, k in zip(stride, kernel, strict=True))
    padding = expand_param(call.arg(3, "padding", 0), nd, "padding", 0)
    return kernel, stride, padding, tuple(x.shape[x.rank - nd :])


def _max_pool(nd: int) -> LoweringFn:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out, idx = _io(call, nd)
        kernel, stride, padding, in_sp = _pool_params(call, nd, x)
        dilation = expand_param(call.arg(4, "dilation", 1), nd, "dilation", 1)
        kb = ctx.kernel(f"max_pool{nd}d")
        win = WindowSpec(kernel, stride, padding, dilation).windows(in_sp)
        _emit_max(ctx, kb, x, out, idx, nd, win)

    return lower


for _nd in (1, 2, 3):
    LOWERINGS.register(f"aten.max_pool{_nd}d_with_indices.default", f"aten.max_pool{_nd}d.default")(
        _max_pool(_nd)
    )
LOWERINGS.register("aten.mkldnn_max_pool2d.default")(_max_pool(2))
LOWERINGS.register("aten.mkldnn_max_pool3d.default")(_max_pool(3))


def _avg_divisor_dim(o: Aff, ext: int, k: int, s: int, p: int, n_in: int, incl: bool) -> int | Expr:
    """Torch's per-dim window size at output index ``o`` (an int when constant)."""
    sizes = set()
    lo_clips = hi_clips = False
    for oi in range(ext):
        start = oi * s - p
        end = min(start + k, n_in + p)
        sizes.add(end - start if incl else min(end, n_in) - max(start, 0))
        lo_clips |= start < 0
        hi_clips |= start + k > (n_in + p if incl else n_in)
    if len(sizes) == 1:
        return sizes.pop()
    so = o.scaled(s)
    if incl:  # min(start + k, In + p) - start
        return fmin(lit(k), Binary("-", lit(n_in + 2 * p), so.expr()))
    if lo_clips and hi_clips:
        return Binary("-", fmin(so.plus(k - p).expr(), lit(n_in)), fmax(so.plus(-p).expr(), lit(0)))
    if hi_clips:
        return fmin(lit(k), Binary("-", lit(n_in + p), so.expr()))
    return fmin(lit(k), so.plus(k - p).expr())


def _emit_avg(
    ctx: LowerCtx,
    kb: Sink,
    x: TensorInfo,
    out: TensorInfo,
    nd: int,
    windows: WindowFn,
    divisor: Callable[[Nest], list[int | Expr]],
) -> None:
    """``Y = sum over the window / divisor``."""
    outer = pool_nest(kb, out.shape, nd)
    acc_dtype = accumulate_dtype(out.dtype)
    acc_t = kb.local(acc_dtype, out.shape, "acc") if acc_dtype != out.dtype else None
    tgt = acc_t[tuple(outer.idx)] if acc_t is not None else ctx.write(out, outer.idx)
    win = windows(kb, outer)
    const, den = 1, None
    for v in divisor(outer):
        if isinstance(v, int):
            const *= v
        else:
            den = v if den is None else Binary("*", den, v)
    if den is None:
        den = lit(float(const))
    elif const != 1:
        den = Binary("*", lit(const), den)
    body = window_reduce(x, outer, win, tgt, "+", lit(0.0), lambda v: cast(v, x.dtype, acc_dtype))
    kb.emit(*outer.wrap([*body, Assign(ctx.write(out, outer.idx), Binary("/", tgt, den))]))


DivisorFn = Callable[[Nest], list[int | Expr]]
"""An average window's divisor per pooled dim (ints when constant) for a `Nest`'s outputs."""


def avg_divisors(
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    in_sp: Sequence[int],
    *,
    include_pad: bool,
    override: int | None,
) -> DivisorFn:
    """Torch's ``avg_pool`` divisor (the forward's and the backward's)."""
    nd = len(kernel)

    def divisor(outer: Nest) -> list[int | Expr]:
        if override:
            return [int(override)]
        lead = len(outer.extents) - nd
        return [
            _avg_divisor_dim(
                outer.aff(lead + d),
                outer.extents[lead + d],
                kernel[d],
                stride[d],
                padding[d],
                in_sp[d],
                include_pad,
            )
            for d in range(nd)
        ]

    return divisor


def _avg_pool(nd: int) -> LoweringFn:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out, _ = _io(call, nd)
        kernel, stride, padding, in_sp = _pool_params(call, nd, x)
        incl = bool(call.arg(5, "count_include_pad", True))
        override = call.arg(6, "divisor_override") if nd > 1 else None
        kb = ctx.kernel(f"avg_pool{nd}d")
        win = WindowSpec(kernel, stride, padding).windows(in_sp)
        divisor = avg_divisors(kernel, stride, padding, in_sp, include_pad=incl, override=override)
        _emit_avg(ctx, kb, x, out, nd, win, divisor)

    return lower


for _nd in (1, 2, 3):
    LOWERINGS.register(f"aten.avg_pool{_nd}d.default")(_avg_pool(_nd))


def _adaptive_bounds(o: Expr, n_in: int, n_out: int) -> tuple[Expr, Expr]:
    """``(o*In)//Out`` and ``((o+1)*In + Out - 1)//Out``: torch's window start and end."""
    lo = Binary("//", imul(n_in, o), lit(n_out))
    hi = Binary("//", iadd(imul(n_in, o), n_in + n_out - 1), lit(n_out))
    return lo, hi


def adaptive_windows(nd: int, in_sp: Sequence[int], out_sp: Sequence[int]) -> WindowFn:
    """Adaptive pooling's windows (module docstring): loop bounds with ``//`` when
    ``Out`` does not divide ``In``."""

    def windows(kb: Sink, outer: Nest) -> Window:
        lead = len(outer.extents) - nd
        loops: list[Loop] = []
        pos: list[Aff] = []
        for d in range(nd):
            n_in, n_out = in_sp[d], out_sp[d]
            if n_in % n_out == 0:
                k = n_in // n_out
                taps = Nest(kb, [k], _TAPS[d])
                loops += taps.dims
                pos.append(outer.aff(lead + d, k).plus(taps.aff(0)))
            else:
                (r,) = kb.fresh_vars(1, _TAPS[d])
                lo, hi = _adaptive_bounds(outer.idx[lead + d], n_in, n_out)
                loops.append((r, lo, hi))
                pos.append(Aff.of((1, r, n_in)))
        return Window(loops, pos, [a.expr() for a in pos], [])

    return windows


def adaptive_divisors(in_sp: Sequence[int], out_sp: Sequence[int]) -> DivisorFn:
    """Adaptive average pooling's window sizes (the forward's and the backward's)."""
    nd = len(in_sp)

    def divisor(outer: Nest) -> list[int | Expr]:
        lead = len(outer.extents) - nd
        sizes: list[int | Expr] = []
        for d in range(nd):
            if in_sp[d] % out_sp[d] == 0:
                sizes.append(in_sp[d] // out_sp[d])
            else:
                lo, hi = _adaptive_bounds(outer.idx[lead + d], in_sp[d], out_sp[d])
                sizes.append(Binary("-", hi, lo))
        return sizes

    return divisor


def _adaptive_avg(nd: int) -> LoweringFn:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out, _ = _io(call, nd)
        in_sp, out_sp = x.shape[x.rank - nd :], out.shape[out.rank - nd :]
        kb = ctx.kernel(f"adaptive_avg_pool{nd}d")
        divisor = adaptive_divisors(in_sp, out_sp)
        _emit_avg(ctx, kb, x, out, nd, adaptive_windows(nd, in_sp, out_sp), divisor)

    return lower


def _adaptive_max(nd: int) -> LoweringFn:
    def lower(ctx: LowerCtx, call: OpCall) -> None:
        x, out, idx = _io(call, nd)
        in_sp, out_sp = x.shape[x.rank - nd :], out.shape[out.rank - nd :]
        kb = ctx.kernel(f"adaptive_max_pool{nd}d")
        _emit_max(ctx, kb, x, out, idx, nd, adaptive_windows(nd, in_sp, out_sp))

    return lower


for _nd in (1, 2, 3):
    _pre = "_" if _nd > 1 else ""
    LOWERINGS.register(f"aten.{_pre}adaptive_avg_pool{_nd}d.default")(_adaptive_avg(_nd))
    LOWERINGS.register(f"aten.adaptive_max_pool{_nd}d.default")(_adaptive_max(_nd))
LOWERINGS.register("aten.adaptive_avg_pool2d.default")(_adaptive_avg(2))
LOWERINGS.register("aten.adaptive_avg_pool3d.default")(_adaptive_avg(3))
