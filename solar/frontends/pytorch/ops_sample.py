"""Lowerings of ``grid_sampler_2d`` (``F.grid_sample`` on 4-D inputs) and
``affine_grid_generator`` (``F.affine_grid``, 2-D and 3-D): one kernel each.

Contract: ``(LowerCtx, OpCall) -> None``. Per output position the kernel unnormalises
the grid's ``(x, y)`` (``align_corners`` either way; ``padding_mode="border"`` clamps it
into the image), keeps the integer corner(s) in kernel-locals and, per channel, reads
only corners inside the image (a data-dependent guard: out-of-image corners are the
zero padding, never read). Bilinear adds the four corners with their weights (4
multiply-adds per channel; the weights are computed once per position); nearest copies
the rounded corner (ties to even, as eager's ``nearbyint``). Bicubic interpolation and
``padding_mode="reflection"`` are not lowered (reported uncovered).

CPU dispatch (torch 2.13): ``F.grid_sample`` on a 4-D input reaches
``grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)`` with
modes as integers (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros,
1 border, 2 reflection).

Note [Affine grid]
~~~~~~~~~~~~~~~~~~
``affine_grid_generator(theta, size, align_corners)`` writes ``grid[n, .., w, k] =
theta[n, k, 0] x_w + theta[n, k, 1] y_h (+ theta[n, k, 2] z_d) + theta[n, k, -1]`` with
the normalised coordinates ``x_w = -1 + 2 w / (W - 1)`` (scaled by ``(W - 1) / W``
without ``align_corners``; 0 for a size-1 dim). Eager multiplies a base grid ``(x, y,
1)`` with ``theta`` (a bmm, 6 FLOPs per 2-D output element). The lowering computes each
coordinate vector once and accumulates the terms from the outermost spatial dim in:
``t[n, h, k] = theta[n, k, 1] y_h + theta[n, k, 2]`` per row, then ``grid = theta[n, k,
0] x_w + t`` per element, 2 FLOPs per output element (the Horner form a fused kernel
would run), so the bound never exceeds eager's work.
"""

from __future__ import annotations

from solar.frontends.kit import Nest, UnsupportedOpError, accumulate_dtype, all_of, cast, nest
from solar.frontends.pytorch.lowering_utils import binop, fn, out0, scalar_lit, tensor_arg
from solar.frontends.pytorch.registry import LOWERINGS, LowerCtx, OpCall
from solar.ir import Access, Assign, DType, Expr, If, IntLit, Reduce, Stmt, lit

__all__: list[str] = []

_BILINEAR, _NEAREST = 0, 1
_ZEROS, _BORDER = 0, 1


def _unnormalise(g: Expr, size: int, *, align: bool, border: bool) -> Expr:
    """Grid value in [-1, 1] -> pixel coordinate (clamped into the image on ``border``)."""
    if align:
        v = binop("*", binop("+", g, lit(1.0)), lit((size - 1) / 2.0))
    else:
        v = binop(
            "/",
            binop("-", binop("*", binop("+", g, lit(1.0)), lit(float(size))), lit(1.0)),
            lit(2.0),
        )
    if border:
        v = fn("min", fn("max", v, lit(0.0)), lit(float(size - 1)))
    return v


def _inside(y: Expr, x: Expr, h: int, w: int) -> Expr:
    conds = [
        binop("<=", IntLit(0), y),
        binop("<", y, IntLit(h)),
        binop("<=", IntLit(0), x),
        binop("<", x, IntLit(w)),
    ]
    cond = all_of(conds)
    assert cond is not None
    return cond


@LOWERINGS.register("aten.grid_sampler_2d")
def _grid_sampler_2d(ctx: LowerCtx, call: OpCall) -> None:
    """``grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)``."""
    x, grid, out = tensor_arg(call, 0, "input"), tensor_arg(call, 1, "grid"), out0(call)
    mode, padding = int(call.arg(2, "interpolation_mode")), int(call.arg(3, "padding_mode"))
    align = bool(call.arg(4, "align_corners"))
    if mode not in (_BILINEAR, _NEAREST) or padding not in (_ZEROS, _BORDER):
        raise UnsupportedOpError(f"grid_sampler_2d mode {mode} with padding {padding}")
    if x.rank != 4 or grid.rank != 4 or grid.shape[-1] != 2:
        raise UnsupportedOpError("grid_sampler_2d expects [N, C, H, W] and [N, Ho, Wo, 2]")
    _, c_ext, h_ext, w_ext = x.shape
    acc = accumulate_dtype(out.dtype)
    kb = ctx.kernel("grid_sample")
    pos = Nest(kb, grid.shape[:3], ("n", "h", "w"))
    n, ho, wo = pos.idx
    key = (n, ho, wo)
    shape = grid.shape[:3]

    def coord(k: int, size: int) -> Expr:
        g = cast(ctx.read(grid, [n, ho, wo, IntLit(k)]), grid.dtype, acc)
        return _unnormalise(g, size, align=align, border=padding == _BORDER)

    fx, fy = kb.local(acc, shape, "fx"), kb.local(acc, shape, "fy")
    body: list[Stmt] = [Assign(fx[key], coord(0, w_ext)), Assign(fy[key], coord(1, h_ext))]
    chan = Nest(kb, (c_ext,), "c")
    (c,) = chan.idx
    dst = ctx.write(out, [n, c, ho, wo])

    def pixel(y: Access, xx: Access) -> Expr:
        return cast(ctx.read(x, [n, c, y, xx]), x.dtype, acc)

    if mode == _NEAREST:
        ix, iy = kb.local(DType.I64, shape, "ix"), kb.local(DType.I64, shape, "iy")
        body += [
            Assign(ix[key], _to_index(fn("round", fx[key]))),
            Assign(iy[key], _to_index(fn("round", fy[key]))),
        ]
        per_c: list[Stmt] = [
            Assign(dst, scalar_lit(0, out.dtype)),
            If(
                _inside(iy[key], ix[key], h_ext, w_ext),
                (Assign(dst, cast(pixel(iy[key], ix[key]), acc, out.dtype)),),
            ),
        ]
        body += chan.wrap(per_c)
        kb.emit(*pos.wrap(body))
        return
    x0f, y0f = kb.local(acc, shape, "x0f"), kb.local(acc, shape, "y0f")
    xs = [kb.local(DType.I64, shape, f"x{k}") for k in range(2)]
    ys = [kb.local(DType.I64, shape, f"y{k}") for k in range(2)]
    tx, ty = kb.local(acc, shape, "tx"), kb.local(acc, shape, "ty")
    weights = [kb.local(acc, shape, f"wt{k}") for k in range(4)]
    body += [
        Assign(x0f[key], fn("floor", fx[key])),
        Assign(y0f[key], fn("floor", fy[key])),
        Assign(xs[0][key], _to_index(x0f[key])),
        Assign(ys[0][key], _to_index(y0f[key])),
        Assign(xs[1][key], binop("+", xs[0][key], IntLit(1))),
        Assign(ys[1][key], binop("+", ys[0][key], IntLit(1))),
        Assign(tx[key], binop("-", fx[key], x0f[key])),
        Assign(ty[key], binop("-", fy[key], y0f[key])),
    ]
    one = lit(1.0)
    wy = (binop("-", one, ty[key]), ty[key])
    wx = (binop("-", one, tx[key]), tx[key])
    corners = [(dy, dx) for dy in range(2) for dx in range(2)]
    body += [
        Assign(weights[k][key], binop("*", wy[dy], wx[dx])) for k, (dy, dx) in enumerate(corners)
    ]
    # accumulate in the output when it has the accumulation type, else in a local
    t = dst if out.dtype == acc else kb.local(acc, [*shape, c_ext], "acc")[(*key, c)]
    per_c = [Assign(t, lit(0.0))]
    for k, (dy, dx) in enumerate(corners):
        y, xx = ys[dy][key], xs[dx][key]
        per_c.append(
            If(
                _inside(y, xx, h_ext, w_ext),
                (Reduce(t, "+", binop("*", weights[k][key], pixel(y, xx))),),
            )
        )
    if t is not dst:
        per_c.append(Assign(dst, cast(t, acc, out.dtype)))
    body += chan.wrap(per_c)
    kb.emit(*pos.wrap(body))


def _to_index(e: Expr) -> Expr:
    """``e`` (an integral float) as an i64 index."""
    return cast(e, None, DType.I64)


@LOWERINGS.register("aten.affine_grid_generator")
def _affine_grid(ctx: LowerCtx, call: OpCall) -> None:
    """``affine_grid_generator(theta, size, align_corners)`` (Note [Affine grid])."""
    theta, out = tensor_arg(call, 0, "theta"), out0(call)
    size = [int(v) for v in call.arg(1, "size")]
    align = bool(call.arg(2, "align_corners"))
    spatial = size[2:]
    nsp = len(spatial)
    if nsp not in (2, 3) or theta.shape != (size[0], nsp, nsp + 1) or 0 in out.shape:
        raise UnsupportedOpError("affine_grid_generator of an unexpected shape")
    dt = out.dtype
    n_ext = size[0]
    kb = ctx.kernel()
    coords = []
    for ext in spatial:
        # Note [Affine grid]: x_w = w * scale + shift (0 for a single position).
        span = 1.0 if align else (ext - 1) / ext
        coord = kb.local(dt, [ext], "coord")
        (v,) = ctx.vars(kb, 1, "s")
        if ext > 1:
            value = binop(
                "+",
                binop("*", cast(v, DType.I64, dt), lit(2.0 / (ext - 1) * span)),
                lit(-span),
            )
            kb.emit(*nest([(v, ext)], [Assign(coord[v], value)]))
        else:
            kb.emit(Assign(coord[IntLit(0)], lit(0.0)))
        coords.append(coord)
    partial: Expr | None = None  # t[n, s_0 .. s_pos, k] read at the current loop indices
    n, k = ctx.vars(kb, 2, "n")
    loops = [(n, n_ext)]
    prefix: list[Expr] = [n]
    for pos, ext in enumerate(spatial):
        (v,) = ctx.vars(kb, 1, "s")
        loops.append((v, ext))
        prefix.append(v)
        col = nsp - 1 - pos  # theta's column for this dim: x (W) is column 0
        term = binop(
            "*",
            cast(ctx.read(theta, [n, k, IntLit(col)]), theta.dtype, dt),
            coords[pos][v if ext > 1 else IntLit(0)],
        )
        const = (
            partial
            if partial is not None
            else cast(ctx.read(theta, [n, k, IntLit(nsp)]), theta.dtype, dt)
        )
        value = binop("+", term, const)
        if pos == nsp - 1:
            target: Access = ctx.write(out, [*prefix, k])
        else:
            buf = kb.local(dt, [n_ext, *spatial[: pos + 1], nsp], "t")
            target = buf[(*prefix, k)]
        kb.emit(*nest([*loops, (k, nsp)], [Assign(target, value)]))
        partial = target
