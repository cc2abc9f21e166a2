"""Per-primitive lowerings against the real JAX output: a parametrised table plus properties.

Each case captures a small function, lowers it (zero uncovered equations), executes the
IR with `solar.validate.execute_program` and compares with ``jax.jit`` of the function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax_check import check_fn, rand

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
lax = jax.lax
pytestmark = pytest.mark.jax

A = rand(3, 4)
B = rand(3, 4, seed=1)
POS = np.abs(A) + 0.5
ROW = rand(1, 4, seed=2)
IM = np.array([[-7, 5, 3, -2], [9, -4, 6, 1], [2, 8, -9, 4]], dtype=np.int32)
J = np.array([[2, -3, 4, 3], [-2, 3, 5, -4], [7, 2, 3, 3]], dtype=np.int32)
HALF = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], dtype=np.float32)
SPECIAL = np.array([1.0, np.inf, -np.inf, np.nan, -3.0, 0.0], dtype=np.float32)
M = rand(2, 3, 5)
IDX = np.array([[0, 4, 2], [1, 1, 3]], dtype=np.int32)
EMB = rand(6, 4)

Case = tuple[str, Callable[..., Any], tuple[Any, ...]]

ELEMENTWISE: list[Case] = [
    ("add", lambda a, b: a + b, (A, B)),
    ("add_broadcast", lambda a, r: a + r, (A, ROW)),
    ("sub", lambda a, b: a - b, (A, B)),
    ("mul_scalar", lambda a: a * 3.0 - 1.0, (A,)),
    ("div", lambda a, b: a / b, (A, POS)),
    ("div_int", lambda i, j: lax.div(i, j), (IM, J)),
    ("rem_float", lambda a, b: lax.rem(a, b), (A * 4, POS)),
    ("rem_int", lambda i, j: lax.rem(i, j), (IM, J)),
    ("max_min", lambda a, b: (jnp.maximum(a, b), jnp.minimum(a, b)), (A, B)),
    ("pow", lambda p, b: p**b, (POS, B)),
    ("atan2", lambda a, b: jnp.arctan2(a, b), (A, B)),
    ("neg_abs_sign", lambda a: (-a, jnp.abs(a), jnp.sign(a)), (A,)),
    ("floor_ceil", lambda a: (jnp.floor(a * 3), jnp.ceil(a * 3)), (A,)),
    ("round_even", lambda h: jnp.round(h), (HALF,)),
    ("round_away", lambda h: lax.round(h), (HALF,)),
    (
        "exp_log",
        lambda a, p: (jnp.exp(a), jnp.exp2(a), jnp.log(p), jnp.log1p(p), jnp.expm1(a)),
        (A, POS),
    ),
    ("tanh_logistic_erf", lambda a: (jnp.tanh(a), jax.nn.sigmoid(a), lax.erf(a)), (A,)),
    ("sqrt_rsqrt_cbrt", lambda p, a: (jnp.sqrt(p), lax.rsqrt(p), jnp.cbrt(a)), (POS, A)),
    ("trig", lambda a: (jnp.sin(a), jnp.cos(a), jnp.tan(a * 0.5)), (A,)),
    ("inverse_trig", lambda a: (jnp.arcsin(a * 0.3), jnp.arccos(a * 0.3), jnp.arctan(a)), (A,)),
    ("hyperbolic", lambda a: (jnp.sinh(a), jnp.cosh(a)), (A,)),
    ("integer_pow", lambda a, p: (a**2, a**3, p**-1, a**0, lax.integer_pow(a, 5)), (A, POS)),
    ("integer_pow_int", lambda i: i**3, (IM,)),
    ("square", lambda a: lax.square(a), (A,)),
    ("is_finite", lambda s: jnp.isfinite(s), (SPECIAL,)),
    ("compare", lambda a, b: (a == b, a != b, a < b, a <= b, a > b, a >= b), (A, B)),
    (
        "logical",
        lambda a, b: ((a > 0) & (b > 0), (a > 0) | (b > 0), ~(a > 0), (a > 0) ^ (b > 0)),
        (A, B),
    ),
    ("where", lambda a, b: jnp.where(a > b, a, 0.0), (A, B)),
    ("select_n_int", lambda i, a, b: lax.select_n(jnp.clip(i, 0, 2), a, b, a * b), (IM, A, B)),
    ("clamp", lambda a: lax.clamp(-0.5, a, 0.7), (A,)),
    ("clip_tensor", lambda a, b: jnp.clip(a, -jnp.abs(b), jnp.abs(b)), (A, B)),
    (
        "convert",
        lambda a, i: ((a * 3).astype(jnp.int32), i.astype(jnp.float32), a.astype(bool)),
        (A, IM),
    ),
    ("stop_gradient", lambda a: lax.stop_gradient(a) * 2.0, (A,)),
    (
        "relu_gelu",
        lambda a: (jax.nn.relu(a), jax.nn.gelu(a), jax.nn.gelu(a, approximate=False)),
        (A,),
    ),
    ("softmax", lambda m: jax.nn.softmax(m, axis=-1), (M,)),
    ("identity_folds", lambda a: a * 1.0 + 0.0, (A,)),
]

SHAPE: list[Case] = [
    (
        "outputs_input_view_literal_repeat",
        lambda a: (a, a.reshape(12), jnp.ones(3), a * 2, a * 2),
        (A,),
    ),
    ("reshape_split_merge", lambda m: (m.reshape(6, 5), m.reshape(2, 15).reshape(30)), (M,)),
    ("reshape_unaligned", lambda m: m.reshape(5, 6) * 2.0, (M,)),
    ("squeeze_expand", lambda a: jnp.expand_dims(a[:, None, :].squeeze(1), 0) + 1.0, (A,)),
    ("broadcast", lambda r, m: jnp.broadcast_to(r, (3, 4)) + m.sum(), (ROW, M)),
    ("transpose", lambda m: jnp.transpose(m, (2, 0, 1)), (M,)),
    ("rev", lambda m: jnp.flip(m, (0, 2)), (M,)),
    ("slice_strided", lambda m: m[:, 1:, ::2], (M,)),
    ("pad_interior", lambda a: lax.pad(a, 0.5, ((1, 2, 1), (0, 1, 0))), (A,)),
    ("pad_negative", lambda a: lax.pad(a, 0.0, ((-1, 1, 0), (2, -1, 1))), (A,)),
    ("pad_tensor_value", lambda a, b: lax.pad(a, b[0, 0], ((1, 1, 0), (1, 1, 0))), (A, B)),
    ("concatenate", lambda a, b: jnp.concatenate([a, b, a], axis=1), (A, B)),
    ("stack", lambda a, b: (jnp.stack([a, b]), jnp.stack([a, b], axis=2)), (A, B)),
    ("split", lambda m: jnp.split(m, [1, 3], axis=2), (M,)),
    ("iota", lambda a: a + jnp.arange(4, dtype=jnp.float32), (A,)),
    ("zeros_ones", lambda a: (jnp.zeros_like(a) + a, jnp.ones((2, 3))), (A,)),
    (
        "dynamic_slice",
        lambda m, i: (
            lax.dynamic_slice(m, (i[0, 0], 1, i[1, 2]), (2, 2, 3)),
            lax.dynamic_slice(m, (0, 1, 9), (1, 2, 2)),
        ),
        (M, IDX),
    ),
    (
        "dynamic_update_slice",
        lambda m, a, i: lax.dynamic_update_slice(m, a[:2, :2].reshape(2, 2, 1), (0, i[1, 2], 3)),
        (M, A, IDX),
    ),
]

REDUCE: list[Case] = [
    (
        "reduce_sum_max_min",
        lambda m: (m.sum(1), m.max((0, 2)), m.min(), m.sum(-1, keepdims=True)),
        (M,),
    ),
    ("reduce_prod", lambda m: jnp.prod(m, axis=2), (M,)),
    ("reduce_int", lambda i: (i.sum(0), i.max(1), i.min()), (IM,)),
    ("all_any", lambda m: (jnp.all(m > -1.0, axis=1), jnp.any(m > 1.0, axis=(0, 2))), (M,)),
    (
        "argmax_argmin",
        lambda m: (jnp.argmax(m, axis=1), jnp.argmin(m, axis=2), jnp.argmax(m)),
        (M,),
    ),
    ("mean_var", lambda m: (m.mean(-1), m.var(-1)), (M,)),
    (
        "cumulative",
        lambda m: (
            jnp.cumsum(m, 1),
            jnp.cumprod(m, 2),
            lax.cummax(m, 2),
            lax.cummin(m, 0),
            lax.cumlogsumexp(m, 2),
        ),
        (M,),
    ),
    (
        "cumulative_reverse",
        lambda m: (
            lax.cumsum(m, 2, reverse=True),
            lax.cummax(m, 1, reverse=True),
            lax.cumlogsumexp(m, 0, reverse=True),
        ),
        (M,),
    ),
    ("logsumexp", lambda m: jax.scipy.special.logsumexp(m, axis=-1), (M,)),
]

LINALG: list[Case] = [
    ("matmul", lambda a, b: a @ b.T, (A, B)),
    ("matvec_dot", lambda a, b: (a @ b[0], jnp.dot(a[0], b[1])), (A, B)),
    ("batched", lambda m: jnp.einsum("bij,bkj->bik", m, m), (M,)),
    (
        "batch_dims_inside",
        lambda m: jnp.einsum("ibj,jbk->bik", m.transpose(1, 0, 2), m.transpose(2, 0, 1)),
        (M,),
    ),
    ("two_contractions", lambda m: jnp.einsum("bij,bij->b", m, m * 2.0), (M,)),
    (
        "outer",
        lambda a, b: jnp.outer(a[0], b[1]) + lax.dot_general(a, b, (((), ()), ((0,), (0,)))),
        (A, B),
    ),
    ("int_dot", lambda i, j: i @ j.T, (IM, J)),
    (
        "bf16_dot",
        lambda a, b: lax.dot_general(
            a.astype(jnp.bfloat16),
            b.astype(jnp.bfloat16),
            (((1,), (1,)), ((), ())),
            preferred_element_type=jnp.float32,
        ),
        (A, B),
    ),
]

GATHER: list[Case] = [
    ("embedding", lambda e, i: e[i], (EMB, IDX)),
    ("take_axis0", lambda e, i: jnp.take(e, i, axis=0), (EMB, IDX)),
    ("take_clip", lambda e, i: jnp.take(e, i + 3, axis=0, mode="clip"), (EMB, IDX)),
    (
        "take_fill_oob",
        lambda e, i: jnp.take(e, i * 3 - 2, axis=0, mode="fill", fill_value=-1.0),
        (EMB, IDX),
    ),
    (
        "take_along_axis",
        lambda m: jnp.take_along_axis(
            m, jnp.argsort(m[..., :1] * 0, axis=1)[..., :1].astype(jnp.int32), axis=2
        ),
        (M,),
    ),
    ("index_columns", lambda m, i: m[:, :, i[0]], (M, IDX)),
    ("index_pairs", lambda e, i: e[i[0], i[1]], (EMB, IDX)),
    ("scatter_set", lambda e, i: e.at[i[0]].set(-1.0), (EMB, IDX)),
    ("scatter_add_dup", lambda e, i: e.at[i.reshape(-1)].add(1.0), (EMB, IDX)),
    (
        "scatter_mul_min_max",
        lambda e, i: (e.at[i[0]].mul(2.0), e.at[i[1]].min(0.0), e.at[i[1]].max(0.5)),
        (EMB, IDX),
    ),
    ("scatter_drop_oob", lambda e, i: e.at[i * 2].add(10.0, mode="drop"), (EMB, IDX)),
    ("scatter_rows", lambda e, a, i: e.at[i[0, :2]].add(a[:2]), (EMB, A, IDX)),
    ("segment_sum", lambda a, i: jax.ops.segment_sum(a, i[0], num_segments=5), (A, IDX)),
]

TABLE = ELEMENTWISE + SHAPE + REDUCE + LINALG + GATHER


@pytest.mark.parametrize(("name", "fn", "inputs"), TABLE, ids=[c[0] for c in TABLE])
def test_primitive(name: str, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> None:
    tol = 2e-2 if name.startswith("bf16") else 1e-5
    check_fn(fn, *inputs, rtol=tol, atol=tol)


CONVS: list[tuple[str, dict[str, Any], tuple[int, ...], tuple[int, ...]]] = [
    ("conv1d", dict(window_strides=(2,), padding=((1, 2),)), (2, 3, 9), (4, 3, 3)),
    (
        "conv2d_nchw",
        dict(window_strides=(1, 2), padding=((1, 1), (0, 1))),
        (2, 3, 7, 8),
        (5, 3, 3, 2),
    ),
    (
        "conv2d_nhwc",
        dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
        (2, 6, 6, 3),
        (3, 3, 3, 4),
    ),
    (
        "conv_dilated",
        dict(window_strides=(1, 1), padding=((2, 2), (1, 1)), rhs_dilation=(2, 1)),
        (1, 2, 7, 6),
        (3, 2, 3, 3),
    ),
    (
        "conv_negative_pad",
        dict(window_strides=(1, 1), padding=((-1, 1), (1, -1))),
        (1, 2, 6, 6),
        (2, 2, 2, 2),
    ),
    (
        "conv_groups",
        dict(window_strides=(1, 1), padding=((1, 1), (1, 1)), feature_group_count=2),
        (2, 4, 5, 5),
        (6, 2, 3, 3),
    ),
    (
        "conv_depthwise",
        dict(window_strides=(1,), padding=((1, 1),), feature_group_count=4),
        (2, 4, 7),
        (4, 1, 3),
    ),
    (
        "conv_batch_groups",
        dict(window_strides=(1, 1), padding=((0, 0), (0, 0)), batch_group_count=2),
        (4, 3, 5, 5),
        (4, 3, 2, 2),
    ),
    (
        "conv_lhs_dilated",
        dict(window_strides=(1, 1), padding=((2, 2), (1, 1)), lhs_dilation=(2, 2)),
        (1, 2, 4, 3),
        (3, 2, 3, 2),
    ),
    (
        "conv_lhs_dilated_strided",
        dict(window_strides=(2, 1), padding=((1, 1), (0, 0)), lhs_dilation=(2, 3)),
        (1, 2, 4, 3),
        (3, 2, 3, 2),
    ),
    (
        "conv3d",
        dict(window_strides=(1, 2, 1), padding=((1, 0), (1, 1), (0, 1))),
        (1, 2, 4, 5, 4),
        (3, 2, 2, 3, 2),
    ),
]


def test_scalar_inputs() -> None:
    check_fn(lambda s, a: (s * a, jnp.maximum(s, 0.5)), np.float32(1.5), A)


@pytest.mark.parametrize(("name", "kw", "xs", "ws"), CONVS, ids=[c[0] for c in CONVS])
def test_conv(name: str, kw: dict[str, Any], xs: tuple[int, ...], ws: tuple[int, ...]) -> None:
    def conv(x: Any, w: Any) -> Any:
        return lax.conv_general_dilated(x, w, **kw)

    check_fn(conv, rand(*xs), rand(*ws, seed=3), rtol=1e-4, atol=1e-4)


def test_conv_transpose() -> None:
    def f(x: Any, w: Any) -> Any:
        return lax.conv_transpose(
            x, w, strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )

    check_fn(f, rand(2, 4, 4, 3), rand(3, 3, 3, 5, seed=1), rtol=1e-4, atol=1e-4)


WINDOWS: list[tuple[str, Callable[..., Any]]] = [
    (
        "max_pool",
        lambda x: lax.reduce_window(
            x, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2), ((0, 0), (0, 0), (1, 1), (1, 1))
        ),
    ),
    (
        "sum_pool_dilated",
        lambda x: lax.reduce_window(
            x, 0.0, lax.add, (1, 2, 2, 2), (1, 1, 1, 2), "SAME", window_dilation=(1, 1, 2, 1)
        ),
    ),
    (
        "min_pool_base_dilated",
        lambda x: lax.reduce_window(
            x, jnp.inf, lax.min, (1, 1, 2, 2), (1, 1, 1, 1), "VALID", base_dilation=(1, 1, 2, 1)
        ),
    ),
    (
        "generic_mul",
        lambda x: lax.reduce_window(x, 1.0, lax.mul, (1, 1, 2, 1), (1, 1, 2, 1), "VALID"),
    ),
]


@pytest.mark.parametrize(("name", "fn"), WINDOWS, ids=[w[0] for w in WINDOWS])
def test_reduce_window(name: str, fn: Callable[..., Any]) -> None:
    check_fn(fn, rand(2, 3, 6, 7), rtol=1e-4, atol=1e-5)


def test_flax_pooling() -> None:
    nn = pytest.importorskip("flax.linen")
    x = rand(2, 7, 6, 3)
    check_fn(
        lambda v: (
            nn.max_pool(v, (2, 2), (2, 2), padding="SAME"),
            nn.avg_pool(v, (3, 3), (1, 1), padding="SAME", count_include_pad=False),
        ),
        x,
    )


_FAST = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_FAST
@given(st.data())
def test_dot_general_dimension_numbers(data: st.DataObject) -> None:
    nb = data.draw(st.integers(0, 1))
    nc = data.draw(st.integers(0, 2))
    nf = data.draw(st.integers(0 if nb + nc else 1, 1))
    sizes = data.draw(
        st.lists(st.integers(1, 3), min_size=nb + nc + 2 * nf, max_size=nb + nc + 2 * nf)
    )
    lhs_kinds = ["b"] * nb + ["c"] * nc + ["f"] * nf
    rhs_kinds = ["b"] * nb + ["c"] * nc + ["g"] * nf
    lhs_order = data.draw(st.permutations(range(len(lhs_kinds))))
    rhs_order = data.draw(st.permutations(range(len(rhs_kinds))))
    ext = {("b", k): sizes[k] for k in range(nb)}
    ext |= {("c", k): sizes[nb + k] for k in range(nc)}
    ext |= {("f", 0): sizes[nb + nc]} if nf else {}
    ext |= {("g", 0): sizes[nb + nc + 1]} if nf else {}

    def layout(kinds: list[str], order: list[int]) -> list[tuple[str, int]]:
        counts: dict[str, int] = {}
        labelled = []
        for kind in kinds:
            labelled.append((kind, counts.get(kind, 0)))
            counts[kind] = counts.get(kind, 0) + 1
        return [labelled[i] for i in order]

    lhs, rhs = layout(lhs_kinds, lhs_order), layout(rhs_kinds, rhs_order)
    dn = (
        ([lhs.index(("c", k)) for k in range(nc)], [rhs.index(("c", k)) for k in range(nc)]),
        ([lhs.index(("b", k)) for k in range(nb)], [rhs.index(("b", k)) for k in range(nb)]),
    )
    a = rand(*[ext[d] for d in lhs], seed=5)
    b = rand(*[ext[d] for d in rhs], seed=6)
    check_fn(lambda x, y: lax.dot_general(x, y, dn), a, b, rtol=1e-4, atol=1e-5)


@_FAST
@given(
    st.integers(1, 2),
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(1, 2),
    st.integers(-1, 2),
    st.integers(0, 2),
    st.integers(1, 2),
)
def test_conv_properties(
    groups: int, ker: int, stride: int, dil: int, pad_lo: int, pad_hi: int, lhs_dil: int
) -> None:
    size = 7
    span = (ker - 1) * dil + 1
    if (size - 1) * lhs_dil + 1 + pad_lo + pad_hi < span:
        pad_hi += span
    x = rand(2, 2 * groups, size)
    w = rand(3 * groups, 2, ker, seed=4)
    check_fn(
        lambda a, b: lax.conv_general_dilated(
            a,
            b,
            (stride,),
            ((pad_lo, pad_hi),),
            lhs_dilation=(lhs_dil,),
            rhs_dilation=(dil,),
            feature_group_count=groups,
        ),
        x,
        w,
        rtol=1e-4,
        atol=1e-4,
    )


@_FAST
@given(
    st.integers(0, 2), st.integers(-2, 2), st.integers(-1, 2), st.integers(1, 3), st.integers(0, 2)
)
def test_slice_pad_properties(start: int, lo: int, hi: int, stride: int, interior: int) -> None:
    x = rand(4, 7)
    if 7 + lo + hi + 6 * interior <= 0:
        hi = 2
    check_fn(lambda a: (a[:, start::stride], lax.pad(a, -1.0, ((0, 0, 0), (lo, hi, interior)))), x)
