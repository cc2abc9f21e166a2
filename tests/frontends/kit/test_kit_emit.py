"""The kit's framework-free emitters, each against a numpy reference (no torch, no jax).

Each test builds a one-kernel program through the kit's `LowerCtx` exactly as a
frontend's driver does, verifies it, runs it with the validator's executor and compares
with a direct numpy computation; FLOPs are checked where the emitter promises a count.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum
from solar.frontends.kit import BuilderKernels, LowerCtx, ProgramBuilder, TensorInfo
from solar.frontends.kit.emit import (
    ConvSpec,
    DotDims,
    Epilogue,
    WindowSpec,
    emit_conv,
    emit_conv_weight_grad,
    emit_dot_general,
    emit_reduce_window,
    emit_select_scatter,
    select_by_compare,
    select_by_index,
)
from solar.ir import DType, Program, lit, verify_program
from solar.validate import execute_program

RNG = np.random.default_rng(0)


def _program(
    shapes: list[tuple[int, ...]],
    out_shape: tuple[int, ...],
    emit: Callable[..., None],
    given: tuple[np.ndarray, ...] = (),
) -> tuple[Program, dict[str, np.ndarray], str]:
    """A program with random f32 inputs of ``shapes`` then the ``given`` arrays (f32 or
    int64), one output, and ``emit(ctx, out, *inputs)``."""
    pb = ProgramBuilder("t")
    ins, arrays = [], {}
    values = [RNG.standard_normal(shape).astype(np.float32) for shape in shapes]
    for value in [*values, *given]:
        dtype = DType.F32 if value.dtype == np.float32 else DType.I64
        ref = pb.tensor("input", dtype, value.shape, "x")
        ins.append(TensorInfo(ref, value.shape, dtype))
        arrays[ref.name] = value
    out = TensorInfo(pb.tensor("output", DType.F32, out_shape, "y"), out_shape, DType.F32)
    host = BuilderKernels(pb)
    emit(LowerCtx(host, "op"), out, *ins)
    host.finish()
    program = pb.build()
    verify_program(program)
    return program, arrays, out.ref.name


def _run(program: Program, arrays: dict[str, np.ndarray], out: str) -> np.ndarray:
    return np.asarray(execute_program(program, arrays)[out])


def _flops(program: Program) -> float:
    return float(evaluate_costs(lift_to_einsum(program)).group_flops.sum())


def test_dot_general_batched_with_epilogue() -> None:
    """``out[b, i, j] = 2 * sum_k A[b, i, k] B[b, j, k] + 0.5 * C[b, i, j]``."""
    dims = DotDims((2,), (2,), (0,), (0,))

    def emit(ctx: LowerCtx, out: TensorInfo, a: TensorInfo, b: TensorInfo, c: TensorInfo) -> None:
        epi = Epilogue(bias=lambda o: c.at(o), alpha=2.0, beta=0.5)
        emit_dot_general(ctx, out, a, b, dims, epi)

    prog, arrays, y = _program([(2, 3, 5), (2, 4, 5), (2, 3, 4)], (2, 3, 4), emit)
    a, b, c = arrays.values()
    want = 2 * np.einsum("bik,bjk->bij", a, b) + 0.5 * c
    np.testing.assert_allclose(_run(prog, arrays, y), want, rtol=1e-5, atol=1e-5)


def test_dot_general_counts_two_flops_per_multiply_add() -> None:
    prog, arrays, y = _program(
        [(3, 5), (5, 4)],
        (3, 4),
        lambda ctx, out, a, b: emit_dot_general(ctx, out, a, b, DotDims((1,), (0,))),
    )
    a, b = arrays.values()
    np.testing.assert_allclose(_run(prog, arrays, y), a @ b, rtol=1e-5, atol=1e-5)
    assert _flops(prog) == 2 * 3 * 4 * 5


def _conv_ref(x: np.ndarray, w: np.ndarray, stride: int, pad: int, groups: int) -> np.ndarray:
    n, _, h, wd = x.shape
    k, cg, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - r) // stride + 1, (wd + 2 * pad - s) // stride + 1
    out = np.zeros((n, k, oh, ow), np.float64)
    kg = k // groups
    for o in range(k):
        g = o // kg
        for i in range(oh):
            for j in range(ow):
                win = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride : i * stride + r,
                    j * stride : j * stride + s,
                ]
                out[:, o, i, j] = np.einsum("ncrs,crs->n", win, w[o])
    return out


@pytest.mark.parametrize("groups", [1, 2])
def test_conv_gather_form(groups: int) -> None:
    spec = ConvSpec(
        strides=(2, 2),
        padding=(1, 1),
        lhs_dilation=(1, 1),
        rhs_dilation=(1, 1),
        feature_groups=groups,
    )
    prog, arrays, y = _program(
        [(2, 4, 7, 6), (6, 4 // groups, 3, 3)],
        (2, 6, 4, 3),
        lambda ctx, out, x, w: emit_conv(ctx, x, w, out, spec),
    )
    x, w = arrays.values()
    np.testing.assert_allclose(
        _run(prog, arrays, y), _conv_ref(x, w, 2, 1, groups), rtol=1e-4, atol=1e-4
    )
    assert prog.kernels[0].name == "conv2d"


def test_conv_scatter_form_is_a_transposed_conv() -> None:
    """Reversed kernel + lhs dilation 2 + low padding ``d(K-1) - p``: PyTorch's
    ``conv_transpose2d(x, w, stride=2, padding=1)`` with ``w`` ``[C, K, R, S]``."""
    c, k, h, stride, pad = 3, 2, 4, 2, 1
    spec = ConvSpec(
        strides=(1, 1),
        padding=(3 - 1 - pad,) * 2,
        lhs_dilation=(stride, stride),
        rhs_dilation=(1, 1),
        rhs_layout=(1, 0, 2, 3),
        rhs_reversed=True,
        rhs_groups_on="in",
    )
    oh = (h - 1) * stride - 2 * pad + 3
    prog, arrays, y = _program(
        [(1, c, h, h), (c, k, 3, 3)],
        (1, k, oh, oh),
        lambda ctx, out, x, w: emit_conv(ctx, x, w, out, spec),
    )
    x, w = arrays.values()
    full = np.zeros((1, k, (h - 1) * stride + 3, (h - 1) * stride + 3))
    for i in range(h):
        for j in range(h):
            full[0, :, i * stride : i * stride + 3, j * stride : j * stride + 3] += np.einsum(
                "c,ckrs->krs", x[0, :, i, j], w
            )
    want = full[:, :, pad : pad + oh, pad : pad + oh]
    np.testing.assert_allclose(_run(prog, arrays, y), want, rtol=1e-4, atol=1e-4)
    assert prog.kernels[0].name == "conv_transpose2d"


def test_reduce_window_max_skips_padding() -> None:
    spec = WindowSpec(window=(3, 3), strides=(2, 2), padding=(1, 1))
    prog, arrays, y = _program(
        [(2, 5, 5)],
        (2, 3, 3),
        lambda ctx, out, x: emit_reduce_window(ctx, x, out, spec, "max", lit(-np.inf)),
    )
    (x,) = arrays.values()
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    want = np.array(
        [
            [
                [xp[b, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3].max() for j in range(3)]
                for i in range(3)
            ]
            for b in range(2)
        ]
    )
    np.testing.assert_allclose(_run(prog, arrays, y), want)
    real_taps = sum(
        (0 <= 2 * i + r - 1 < 5) * (0 <= 2 * j + s - 1 < 5)
        for i in range(3)
        for j in range(3)
        for r in range(3)
        for s in range(3)
    )
    assert _flops(prog) == 2 * real_taps  # one max per real tap (none in padding), 2 rows


@pytest.mark.parametrize("groups", [1, 2])
def test_conv_weight_grad_is_a_conv_with_roles_swapped(groups: int) -> None:
    """``dW[k, c, r, s] = sum_{n, i, j} G[n, k, i, j] Xpad[n, g*Cg + c, 2i + r, 2j + s]``,
    two FLOPs per real tap (none charged in the padding)."""
    n, c, h, k, stride, pad = 2, 4, 7, 6, 2, 1
    oh = (h + 2 * pad - 3) // stride + 1
    prog, arrays, y = _program(
        [(n, k, oh, oh), (n, c, h, h)],
        (k, c // groups, 3, 3),
        lambda ctx, out, g, x: emit_conv_weight_grad(
            ctx, g, x, out, strides=(2, 2), padding=(1, 1), dilation=(1, 1), groups=groups
        ),
    )
    g, x = arrays.values()
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kg, cg = k // groups, c // groups
    want = np.zeros((k, cg, 3, 3))
    for o in range(k):
        chans = slice(o // kg * cg, (o // kg + 1) * cg)
        for r in range(3):
            for t in range(3):
                win = xp[:, chans, r : r + stride * oh : stride, t : t + stride * oh : stride]
                want[o, :, r, t] = np.einsum("nij,ncij->c", g[:, o], win)
    np.testing.assert_allclose(_run(prog, arrays, y), want, rtol=1e-4, atol=1e-4)
    real = sum(0 <= stride * i + r - pad < h for i in range(oh) for r in range(3))
    assert _flops(prog) == 2 * n * k * cg * real * real


def _max_pool_ref(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2x2 stride-2 max pooling of ``[B, H, W]``: the gradient (at each window's first
    maximum) and the flat argmax indices over the plane."""
    dx = np.zeros_like(x)
    idx = np.zeros(g.shape, np.int64)
    for b, i, j in np.ndindex(*g.shape):
        win = x[b, 2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
        r, s = np.unravel_index(int(np.argmax(win)), win.shape)
        idx[b, i, j] = (2 * i + r) * x.shape[2] + 2 * j + s
        dx[b, 2 * i + r, 2 * j + s] += g[b, i, j]
    return dx, idx


def test_select_scatter_by_compare_is_the_max_pool_gradient() -> None:
    """XLA's selection: one compare per tap and one add per window."""
    spec = WindowSpec(window=(1, 2, 2), strides=(1, 2, 2), padding=(0, 0, 0))

    def emit(ctx: LowerCtx, out: TensorInfo, x: TensorInfo, g: TensorInfo) -> None:
        emit_select_scatter(ctx, g, out, select_by_compare(x, g.shape, spec, ">"))

    prog, arrays, y = _program([(2, 4, 6), (2, 2, 3)], (2, 4, 6), emit)
    x, g = arrays.values()
    np.testing.assert_allclose(_run(prog, arrays, y), _max_pool_ref(x, g)[0])
    assert _flops(prog) == x.size + g.size


def test_select_scatter_by_index_reads_the_forward_indices() -> None:
    """PyTorch's selection: the forward's flat indices, so one add per window only."""
    x = RNG.standard_normal((2, 4, 6)).astype(np.float32)
    g = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    want, idx = _max_pool_ref(x, g)

    def emit(ctx: LowerCtx, out: TensorInfo, g: TensorInfo, i: TensorInfo) -> None:
        emit_select_scatter(ctx, g, out, select_by_index(i, (4, 6)))

    prog, arrays, y = _program([], (2, 4, 6), emit, (g, idx))
    np.testing.assert_allclose(_run(prog, arrays, y), want)
    assert _flops(prog) == g.size
