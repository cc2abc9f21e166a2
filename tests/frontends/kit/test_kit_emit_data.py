"""The kit's reduction, scan, pad and gather/scatter emitters against numpy (no torch, no
jax): each emitter once, over the general form its frontends adapt to.

Each case emits one kernel into a fresh program, verifies and executes it, and compares
with numpy; FLOPs and written bytes are checked where the emitter promises them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from solar.bounds import CostArrays, evaluate_costs
from solar.einsum import lift_to_einsum
from solar.frontends.kit import (
    BuilderKernels,
    ProgramBuilder,
    Sink,
    TensorInfo,
    UnsupportedOpError,
    cast,
)
from solar.frontends.kit.emit.gather import GatherDims, ScatterDims, emit_gather, emit_scatter
from solar.frontends.kit.emit.pad import PadMode, emit_pad
from solar.frontends.kit.emit.reduce import (
    ReduceRows,
    emit_arg_reduce,
    emit_count_reduce,
    emit_moments,
    emit_reduce,
)
from solar.frontends.kit.emit.scan import emit_scan
from solar.ir import Binary, DType, Expr, IntLit, Program, lit, verify_program
from solar.validate import execute_program

_DTYPES = {
    np.dtype(np.float32): DType.F32,
    np.dtype(np.int32): DType.I32,
    np.dtype(bool): DType.BOOL,
}

Emit = Callable[..., None]


def _lower(
    arrays: Sequence[np.ndarray], outs: Sequence[tuple[tuple[int, ...], DType]], emit: Emit
) -> tuple[Program, dict[str, np.ndarray], list[str]]:
    """``emit(kernel, *outputs, *inputs)`` into one program over ``arrays``."""
    pb = ProgramBuilder("t")
    ins, feed = [], {}
    for a in arrays:
        ref = pb.tensor("input", _DTYPES[a.dtype], a.shape, "x")
        ins.append(TensorInfo(ref, a.shape, _DTYPES[a.dtype]))
        feed[ref.name] = a
    results = [TensorInfo(pb.tensor("output", dt, shape, "y"), shape, dt) for shape, dt in outs]
    host = BuilderKernels(pb)
    emit(host.start_kernel("op"), *results, *ins)
    host.finish()
    program = pb.build()
    verify_program(program)
    return program, feed, [r.ref.name for r in results]


def _run(
    arrays: Sequence[np.ndarray], outs: Sequence[tuple[tuple[int, ...], DType]], emit: Emit
) -> tuple[list[np.ndarray], CostArrays]:
    program, feed, names = _lower(arrays, outs, emit)
    got = execute_program(program, feed)
    costs = evaluate_costs(lift_to_einsum(program))
    return [np.asarray(got[n]) for n in names], costs


X = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)


# -- reductions -------------------------------------------------------------------------


@pytest.mark.parametrize("axes", [(1,), (0, 2), (0, 1, 2)])
def test_reduce_sum_and_mean(axes: tuple[int, ...]) -> None:
    kept = tuple(n for k, n in enumerate(X.shape) if k not in axes)

    def emit(kb: Sink, s: TensorInfo, m: TensorInfo, x: TensorInfo) -> None:
        rows = ReduceRows(kb, x.shape, axes)
        value = lambda _dt: x.at(rows.idx)  # noqa: E731
        finish = lambda acc, n: Binary("/", acc, lit(float(n)))  # noqa: E731
        emit_reduce(rows, s.at(rows.kept), "+", DType.F32, value)
        emit_reduce(rows, m.at(rows.kept), "+", DType.F32, value, finish=finish)

    (s, m), costs = _run([X], [(kept, DType.F32), (kept, DType.F32)], emit)
    np.testing.assert_allclose(s, X.sum(axes), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m, X.mean(axes), rtol=1e-5, atol=1e-5)
    assert costs.group_flops.sum() == 2 * X.size + len(m.flat)  # a combine each, a division


def test_arg_reduce_takes_the_first_extreme_and_the_first_nan() -> None:
    """Note [Arg-reduce NaN]: 3 FLOPs per element, NaN rows give their first NaN."""
    x = np.array([[1, 3, 3, 0], [np.nan, 2, np.nan, 9], [5, 5, 5, 5]], np.float32)
    want_max = np.array([1, 0, 0])
    want_min = np.array([3, 0, 0])

    def emit(kb: Sink, vmax: TensorInfo, imax: TensorInfo, imin: TensorInfo, t: TensorInfo) -> None:
        r = ReduceRows(kb, t.shape, (1,))
        emit_arg_reduce(r, t.at, t.dtype, "max", values=vmax.at(r.kept), indices=imax.at(r.kept))
        r = ReduceRows(kb, t.shape, (1,))
        emit_arg_reduce(r, t.at, t.dtype, "min", values=None, indices=imin.at(r.kept))

    outs = [((3,), DType.F32), ((3,), DType.I64), ((3,), DType.I64)]
    (vmax, imax, imin), costs = _run([x], outs, emit)
    np.testing.assert_array_equal(imax, want_max)
    np.testing.assert_array_equal(imin, want_min)
    np.testing.assert_array_equal(vmax, [3, np.nan, 5])
    assert costs.group_flops.sum() == 2 * 3 * x.size


@pytest.mark.parametrize("every", [True, False])
def test_count_reduce_is_all_or_any(every: bool) -> None:
    b = np.array([[True, True, False], [True, True, True], [False, False, False]])

    def emit(kb: Sink, out: TensorInfo, t: TensorInfo) -> None:
        rows = ReduceRows(kb, t.shape, (1,))
        emit_count_reduce(rows, out.at(rows.kept), t.at(rows.idx), every=every)

    (got,), _ = _run([b], [((3,), DType.BOOL)], emit)
    np.testing.assert_array_equal(got, b.all(1) if every else b.any(1))


@pytest.mark.parametrize(("correction", "root"), [(1.0, False), (0.0, True)])
def test_moments(correction: float, root: bool) -> None:
    def emit(kb: Sink, out: TensorInfo, mean: TensorInfo, x: TensorInfo) -> None:
        rows = ReduceRows(kb, x.shape, (0, 2))
        emit_moments(
            rows, x.at, x.dtype, DType.F32, correction=correction, root=root,
            target=out.at(rows.kept), mean_target=mean.at(rows.kept),
        )  # fmt: skip

    (got, mean), _ = _run([X], [((4,), DType.F32), ((4,), DType.F32)], emit)
    want = X.var((0, 2), ddof=int(correction))
    np.testing.assert_allclose(got, np.sqrt(want) if root else want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean, X.mean((0, 2)), rtol=1e-5, atol=1e-5)


# -- scans ------------------------------------------------------------------------------


def _np_scan(x: np.ndarray, axis: int, combine: str, reverse: bool) -> np.ndarray:
    y = np.flip(x, axis) if reverse else x
    fn: Callable[..., np.ndarray] = {
        "sum": np.cumsum,
        "prod": np.cumprod,
        "max": np.maximum.accumulate,
        "min": np.minimum.accumulate,
        "logsumexp": np.logaddexp.accumulate,
    }[combine]  # type: ignore[assignment]
    out = fn(y, axis=axis)
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("combine", ["sum", "prod", "max", "min", "logsumexp"])
@pytest.mark.parametrize(("axis", "reverse"), [(1, False), (0, True), (2, True)])
def test_scan(combine: str, axis: int, reverse: bool) -> None:
    def emit(kb: Sink, out: TensorInfo, x: TensorInfo) -> None:
        emit_scan(kb, x.shape, axis, x.at, x.dtype, out.at, out.dtype, combine, reverse=reverse)

    (got,), _ = _run([X], [(X.shape, DType.F32)], emit)
    np.testing.assert_allclose(got, _np_scan(X, axis, combine, reverse), rtol=1e-4, atol=1e-5)


def test_scan_extreme_index_takes_the_latest_tie() -> None:
    x = np.array([[1, 3, 3, 2, 5, 5]], np.float32)

    def emit(kb: Sink, out: TensorInfo, idx: TensorInfo, t: TensorInfo) -> None:
        emit_scan(kb, t.shape, 1, t.at, t.dtype, out.at, out.dtype, "max", index_write=idx.at)

    (vals, idx), _ = _run([x], [(x.shape, DType.F32), (x.shape, DType.I64)], emit)
    np.testing.assert_array_equal(vals, [[1, 3, 3, 3, 5, 5]])
    np.testing.assert_array_equal(idx, [[0, 1, 2, 2, 4, 5]])


# -- padding ----------------------------------------------------------------------------

_A = np.arange(1, 13, dtype=np.float32).reshape(3, 4)


def _np_lax_pad(x: np.ndarray, fill: float, config: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """``lax.pad`` in numpy: dilate, then pad (negative amounts crop)."""
    for d, (lo, hi, it) in enumerate(config):
        n = x.shape[d]
        shape = list(x.shape)
        shape[d] = (n - 1) * (it + 1) + 1 if n else 0
        dil = np.full(shape, fill, x.dtype)
        sl = [slice(None)] * x.ndim
        sl[d] = slice(None, None, it + 1)
        dil[tuple(sl)] = x
        widths = [(0, 0)] * x.ndim
        widths[d] = (max(lo, 0), max(hi, 0))
        x = np.pad(dil, widths, constant_values=fill)
        sl = [slice(None)] * x.ndim
        sl[d] = slice(max(-lo, 0), x.shape[d] - max(-hi, 0))
        x = x[tuple(sl)]
    return x


@pytest.mark.parametrize(
    "config",
    [
        ((1, 2, 0), (0, 1, 0)),
        ((1, 2, 1), (0, 1, 0)),
        ((-1, 1, 0), (2, -1, 1)),
        ((-2, -1, 2), (3, 0, 1)),
        ((0, 0, 0), (-3, 2, 2)),
    ],
)
def test_constant_pad(config: tuple[tuple[int, int, int], ...]) -> None:
    """Every element once: exactly the output's bytes without interior padding, at most
    them with it (Note [Interior padding])."""
    want = _np_lax_pad(_A, -7.0, config)

    def emit(kb: Sink, out: TensorInfo, x: TensorInfo) -> None:
        emit_pad(kb, x.shape, config, x.at, x.dtype, out.at, out.dtype, fill=lit(-7.0))

    (got,), costs = _run([_A], [(want.shape, DType.F32)], emit)
    np.testing.assert_array_equal(got, want)
    written = costs.written_bytes.sum()
    assert written == want.size * 4 if not any(c[2] for c in config) else written <= want.size * 4
    assert costs.group_flops.sum() == 0


@pytest.mark.parametrize(
    ("mode", "np_mode"), [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]
)
def test_border_pad(mode: PadMode, np_mode: str) -> None:
    widths = ((1, 2), (3, 0))
    want = np.pad(_A, widths, mode=np_mode)  # type: ignore[call-overload]

    def emit(kb: Sink, out: TensorInfo, x: TensorInfo) -> None:
        config = [(lo, hi, 0) for lo, hi in widths]
        emit_pad(kb, x.shape, config, x.at, x.dtype, out.at, out.dtype, mode=mode)

    (got,), costs = _run([_A], [(want.shape, DType.F32)], emit)
    np.testing.assert_array_equal(got, want)
    assert costs.written_bytes.sum() == want.size * 4


def test_border_pad_rejects_interior_padding() -> None:
    def emit(kb: Sink, out: TensorInfo, x: TensorInfo) -> None:
        config = [(1, 1, 1), (0, 0, 0)]
        emit_pad(kb, x.shape, config, x.at, x.dtype, out.at, out.dtype, mode="reflect")

    with pytest.raises(UnsupportedOpError, match="interior"):
        _lower([_A], [((7, 4), DType.F32)], emit)


# -- gather / scatter -------------------------------------------------------------------

_E = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
_IDX = np.array([[3, 0], [4, 4], [1, 2]], np.int32)


def _start(idx: TensorInfo) -> Callable[[Sequence[Expr], int], Expr]:
    return lambda batch, _j: idx.at(batch)


def test_gather_rows_is_an_embedding_lookup() -> None:
    dims = GatherDims((2,), frozenset({0}), (0,), (1, 4))

    def emit(kb: Sink, out: TensorInfo, w: TensorInfo, idx: TensorInfo) -> None:
        emit_gather(kb, w.shape, w.at, _start(idx), dims, out.shape, out.at)

    (got,), _ = _run([_E, _IDX], [((3, 2, 4), DType.F32)], emit)
    np.testing.assert_array_equal(got, _E[_IDX])


def test_gather_with_batching_dims_is_take_along_axis() -> None:
    j = np.array([[1, 3, 0], [2, 2, 1], [0, 0, 3], [3, 1, 2], [1, 0, 0]], np.int32)
    dims = GatherDims((), frozenset({1}), (1,), (1, 1), (0,), (0,))

    def emit(kb: Sink, out: TensorInfo, x: TensorInfo, idx: TensorInfo) -> None:
        emit_gather(kb, x.shape, x.at, _start(idx), dims, out.shape, out.at)

    (got,), _ = _run([_E, j], [((5, 3), DType.F32)], emit)
    np.testing.assert_array_equal(got, np.take_along_axis(_E, j, axis=1))


def test_gather_fill_or_drop_fills_out_of_bounds_windows() -> None:
    idx = np.array([1, 7, -1, 4], np.int32)
    dims = GatherDims((1,), frozenset({0}), (0,), (1, 4))

    def emit(kb: Sink, out: TensorInfo, w: TensorInfo, i: TensorInfo) -> None:
        emit_gather(
            kb, w.shape, w.at, _start(i), dims, out.shape, out.at,
            mode="FILL_OR_DROP", fill=lit(0.5),
        )  # fmt: skip

    (got,), _ = _run([_E, idx], [((4, 4), DType.F32)], emit)
    want = np.where(((idx >= 0) & (idx < 5))[:, None], _E[np.clip(idx, 0, 4)], 0.5)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["PROMISE_IN_BOUNDS", "FILL_OR_DROP"])
def test_scatter_add_rows(mode: str) -> None:
    idx = np.array([3, 0, 3] if mode == "PROMISE_IN_BOUNDS" else [3, 9, 0], np.int32)
    upd = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    dims = ScatterDims((1,), frozenset({0}), (0,))

    def emit(kb: Sink, out: TensorInfo, x: TensorInfo, u: TensorInfo, i: TensorInfo) -> None:
        emit_scatter(
            kb, out.shape, out.at, _start(i), dims, u.shape, u.at, u.dtype, "+",
            mode=mode, copy=x.at,  # type: ignore[arg-type]
        )  # fmt: skip

    (got,), _ = _run([_E, upd, idx], [((5, 4), DType.F32)], emit)
    want = _E.copy()
    for r, k in enumerate(idx):
        if 0 <= k < 5:
            want[k] += upd[r]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_emitters_cast_to_the_accumulator() -> None:
    """A bf16 sum accumulates in an f32 local: the kernel stores through one cast."""
    xb = np.round(X, 2)

    def emit(kb: Sink, out: TensorInfo, x: TensorInfo) -> None:
        rows = ReduceRows(kb, x.shape, (2,))
        value = lambda dt: cast(x.at(rows.idx), x.dtype, dt)  # noqa: E731
        emit_reduce(rows, out.at(rows.kept), "+", DType.BF16, value)

    program, _, _ = _lower([xb], [((3, 4), DType.BF16)], emit)
    (local,) = program.kernels[0].locals
    assert local.dtype == DType.F32 and local.shape == (IntLit(3), IntLit(4))
