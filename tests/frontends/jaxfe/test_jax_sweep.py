"""Regressions from a robustness sweep over user-style JAX programs.

Each case is a bug the sweep found: a crash, an uncovered common primitive, or a count
that lost work. Every lowering is executed against ``jax.jit`` (`jax_check.check_fn`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from jax_check import check_fn, program_costs, rand

from solar.frontends.jaxfe import lower_jaxpr, trace_function
from solar.ir import eliminate_dead_code

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
lax = jax.lax
pytestmark = pytest.mark.jax

X = rand(2, 9, 9, 3)
A5 = rand(5, 5)
SPD5 = (A5 @ A5.T + 5 * np.eye(5)).astype(np.float32)
B53 = rand(5, 3, seed=1)
AB = rand(3, 4, 4, seed=2)


def _kernel_flops(fn: Callable[..., Any], *inputs: Any) -> dict[str, float]:
    from solar.einsum import lift_to_einsum

    lowered = check_fn(fn, *inputs, rtol=1e-4, atol=1e-4)
    g = lift_to_einsum(lowered.program)
    env = g.size_env()
    return {k.name: float(k.flops.evaluate(env)) for k in g.kernels}


def _total_order() -> dict[str, Any]:
    from jax._src import lax as lax_internal  # the total-order comparisons are internal

    return {k: getattr(lax_internal, f"{k}_to_p") for k in ("lt", "le", "eq")}


_TO = _total_order()


def _tri(lower: bool) -> np.ndarray:
    t = np.tril(A5) if lower else np.triu(A5)
    return (t + 4 * np.eye(5)).astype(np.float32)


CASES: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
    # An inlined call whose unused result was skipped as dead (KeyError before).
    (
        "jacrev_dead_call_output",
        lambda q: jax.jacrev(lambda q: jnp.cumsum(jnp.cos(q))[-1])(q),
        (rand(5),),
    ),
    (
        "add_any_grad_fanout",
        lambda x: jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(x),
        (rand(3, 4),),
    ),
    ("tile", lambda x: (jnp.tile(x, (2, 3)), jnp.tile(x[0], (2, 1, 2))), (rand(2, 3),)),
    ("unstack", lambda x: jnp.unstack(x * 2.0, axis=1), (rand(2, 3, 4),)),
    ("einsum_diagonal_uint32_iota", lambda o: jnp.einsum("bii->b", o), (rand(3, 4, 4),)),
    ("diagonal_platform_index", lambda x: jnp.diagonal(x * 2.0), (rand(4, 4),)),
    (
        "reshape_with_dimensions",
        lambda x: lax.reshape(x * 2.0, (5, 12), dimensions=(2, 0, 1)),
        (rand(3, 4, 5),),
    ),
    ("scatter_sub", lambda x: x.at[jnp.array([0, 2, 2])].subtract(1.5), (rand(4, 3),)),
    (
        "inverse_hyperbolic",
        lambda x: (
            jnp.arcsinh(x),
            jnp.arccosh(jnp.abs(x) + 1.0),
            jnp.arctanh(jnp.clip(x, -0.9, 0.9)),
        ),
        (rand(3, 4),),
    ),
    (
        "total_order_compare",
        lambda a, b: (_TO["lt"].bind(a, b), _TO["le"].bind(a, b), _TO["eq"].bind(a, a)),
        (rand(6), rand(6, seed=1)),
    ),
    ("cholesky", lambda s: jnp.linalg.cholesky(s), (SPD5,)),
    (
        "cholesky_batched",
        lambda a: jnp.linalg.cholesky(a @ jnp.swapaxes(a, -1, -2) + 4 * jnp.eye(4)),
        (AB,),
    ),
    ("lu_square", lambda a: lax.linalg.lu(a), (A5,)),
    ("lu_wide_and_tall", lambda a: (lax.linalg.lu(a), lax.linalg.lu(a.T)), (rand(3, 5),)),
    ("lu_batched", lambda a: lax.linalg.lu(a), (AB,)),
    (
        "solve_vector_and_matrix",
        lambda a, b: (jnp.linalg.solve(a, b[:, 0]), jnp.linalg.solve(a, b)),
        (A5, B53),
    ),
    (
        "inv_det_slogdet",
        lambda a: (jnp.linalg.inv(a), jnp.linalg.det(a), jnp.linalg.slogdet(a)),
        (A5,),
    ),
    # argmax/argmin over bools emitted `max=` into a bool local (E0213, no report)
    (
        "jnp_select_argmax_over_bools",
        lambda x: jnp.select([x > 1, x < -1], [x * 2, x * 3], default=0.0),
        (rand(6, 6) * 2,),
    ),
    (
        "argmax_argmin_bool",
        lambda x: (jnp.argmax(x > 0.3, axis=1), jnp.argmin(x > 0, axis=0)),
        (rand(6, 5),),
    ),
    ("max_min_of_bools", lambda x: (jnp.max(x > 0, axis=1), jnp.min(x > 0, axis=0)), (rand(5, 6),)),
    # JAX's argmax/argmin return the first NaN; the lowering returned the last index
    (
        "argmax_argmin_with_nans",
        lambda x: (
            jnp.argmax(jnp.where(x > 1, jnp.nan, x), axis=1),
            jnp.argmin(jnp.where(x < -1, jnp.nan, x), axis=0),
        ),
        (rand(6, 7) * 2,),
    ),
    (
        "cho_solve",
        lambda s, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(s), b),
        (SPD5, B53),
    ),
]


EMPTY = np.zeros((0, 4), dtype=np.float32)

# Zero-size outputs: lowerings skip zero-trip nests, which left the output unwritten
# (E0217) and the executor's written mask of an empty tensor never cleared (validation
# "not fully written"). Each output is written by an `empty_output` kernel: no FLOPs.
EMPTY_CASES: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
    ("matmul", lambda w: jnp.zeros((0, 3)) @ w, (rand(3, 4),)),
    ("elementwise", lambda e: e * 2.0, (EMPTY,)),
    ("sum_and_transpose", lambda e: (e.sum(axis=0), e.T), (EMPTY,)),
    ("concat_with_empty", lambda e, x: (jnp.concatenate([e, x]), e + 1.0), (EMPTY, rand(2, 4))),
]


@pytest.mark.parametrize(("name", "fn", "inputs"), EMPTY_CASES, ids=[c[0] for c in EMPTY_CASES])
def test_zero_size_outputs_are_written_and_validate(
    name: str, fn: Callable[..., Any], inputs: Any
) -> None:
    lowered = check_fn(fn, *inputs)
    assert lowered.program.kernels[0].name == "empty_output"
    # no arithmetic on an empty operand; only the empty sum's 4 zeros are written
    assert program_costs(lowered.program)[:2] == (0.0, 16.0 * (name == "sum_and_transpose"))


@pytest.mark.parametrize(("name", "fn", "inputs"), CASES, ids=[c[0] for c in CASES])
def test_sweep_case_lowers_and_validates(name: str, fn: Callable[..., Any], inputs: Any) -> None:
    lowered = check_fn(fn, *inputs, rtol=1e-4, atol=1e-4)
    assert lowered.ops_seen == lowered.ops_lowered


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_triangular_solve_every_flag(
    lower: bool, transpose_a: bool, left_side: bool, unit: bool
) -> None:
    rhs = B53 if left_side else B53.T

    def f(a: Any, b: Any) -> Any:
        return lax.linalg.triangular_solve(
            a, b, left_side=left_side, lower=lower, transpose_a=transpose_a, unit_diagonal=unit
        )

    flops = _kernel_flops(f, _tri(lower), rhs)
    # n^2 per right-hand side: n(n-1)/2 multiply-adds, n subtractions (and n divisions).
    assert flops["triangular_solve"] == 3 * (5 * 4 + 5 + (0 if unit else 5))


def test_decomposition_flop_counts_are_the_textbook_ones() -> None:
    n = 5
    chol = _kernel_flops(lambda s: lax.linalg.cholesky(s, symmetrize_input=False), SPD5)
    # dot products (2 per term) + one subtraction per lower element + sqrt/div per column.
    assert (
        chol["cholesky"]
        == sum(2 * j * (n - j) for j in range(n)) + n * (n + 1) // 2 + n * (n - 1) // 2 + n
    )
    lu = _kernel_flops(lambda a: lax.linalg.lu(a)[0], A5)
    # abs + compare per pivot candidate, a division per multiplier, 2 per update element.
    assert lu["lu"] == sum(2 * (n - j) + (n - j - 1) + 2 * (n - j - 1) ** 2 for j in range(n))


@pytest.mark.parametrize(
    ("window", "strides", "padding"),
    [
        ((2, 2), (2, 2), "VALID"),
        ((3, 3), (2, 2), "SAME"),
        ((3, 3), (1, 1), "SAME"),
        ((2, 3), (1, 2), ((1, 0), (0, 2))),
    ],
)
def test_max_pool_gradient_select_and_scatter_add(window: Any, strides: Any, padding: Any) -> None:
    def f(x: Any) -> Any:
        return jax.grad(lambda x: jnp.sum(jnp.sin(nn.max_pool(x, window, strides, padding))))(x)

    flops = _kernel_flops(f, X)
    windows = np.prod(nn.max_pool(X, window, strides, padding).shape)
    # One compare per in-bounds tap (the forward reduce_window's count) + one add per window
    # (the gradient's kernel is named after its phase, backward: docs/training.md § JAX).
    assert flops["backward_select_and_scatter_add"] == flops["reduce_window_max"] + windows


def test_max_pool_gradient_ties_and_min_pool() -> None:
    ties = np.round(X * 2) / 2
    check_fn(lambda x: jax.grad(lambda x: jnp.sum(nn.max_pool(x, (3, 3), (1, 1), "SAME")))(x), ties)
    check_fn(lambda x: jax.grad(lambda x: jnp.sum(-(nn.max_pool(-x, (2, 2), (2, 2)) ** 2)))(x), X)


def test_solve_inside_scan_is_covered() -> None:
    def kalman(f_mat: Any, zs: Any) -> Any:
        def step(c: Any, z: Any) -> Any:
            x, p = c
            p = f_mat @ p @ f_mat.T + 0.01 * jnp.eye(3)
            k = jnp.linalg.solve(p + 0.1 * jnp.eye(3), p).T
            x = x + k @ (z - x)
            return (x, (jnp.eye(3) - k) @ p), x

        return lax.scan(step, (jnp.zeros(3), jnp.eye(3)), zs)

    lowered = check_fn(
        kalman, (np.eye(3) * 1.01).astype(np.float32), rand(6, 3), rtol=1e-4, atol=1e-4
    )
    assert [k.name for k in lowered.program.kernels if "scan" in k.name]


def test_work_feeding_an_uncovered_op_is_kept() -> None:
    w1, w2 = rand(16, 32), rand(32, 10, seed=1)

    def f(x: Any) -> Any:
        return lax.approx_max_k(jax.nn.relu(x @ w1) @ w2, 3)

    lowered = check_fn(f, rand(8, 16), covered=False)
    assert [u.target for u in lowered.coverage] == ["approx_top_k"]
    assert lowered.keep_alive, "approx_top_k's operand must be recorded"
    kept = eliminate_dead_code(lowered.program, keep=lowered.keep_alive)
    flops, _, _ = program_costs(kept)
    assert flops >= 2 * 8 * 16 * 32 + 2 * 8 * 32 * 10
    assert program_costs(eliminate_dead_code(lowered.program))[0] == 0  # what was lost


def test_uint8_inputs_are_covered_with_their_own_bytes() -> None:
    obs = np.random.default_rng(0).integers(0, 256, (2, 6, 6, 3)).astype(np.uint8)

    def f(o: Any) -> Any:
        x = o.astype(jnp.float32) / 255.0
        pad = jnp.pad(o, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=250)
        return x.mean(axis=(1, 2)), pad, jnp.where(o == 200, o, jnp.uint8(255)).T

    lowered = check_fn(f, obs)
    roles = {t.name: (t.role, t.dtype.value) for t in lowered.program.tensors}
    assert roles["x0"] == ("input", "i8")
    _, _, fused = program_costs(lowered.program)
    # 1 byte per uint8 element (x0, the padded and the transposed outputs), 4 per float.
    assert 3 * obs.size + 2 * 3 * 4 <= fused <= 2 * obs.size + 2 * 8 * 8 * 3 + 2 * 3 * 4


def test_uint8_arithmetic_stays_uncovered() -> None:
    obs = np.random.default_rng(0).integers(0, 256, (4, 5)).astype(np.uint8)
    lowered = check_fn(lambda o: (o // 2, o > 100), obs, covered=False)
    assert {u.target for u in lowered.coverage} == {"div", "gt"}
    assert "uint8" in lowered.coverage[0].reason


def test_uint8_indices_are_decoded_or_uncovered() -> None:
    x, i = rand(300, 4), np.array([5, 200, 250], np.uint8)

    def f(x: Any, i: Any) -> Any:
        return x[i], lax.dynamic_slice(x, (i[1], jnp.uint8(0)), (2, 4))

    lowered = check_fn(f, x, i, covered=False)  # x[i] converts i to int32 first
    assert [u.target for u in lowered.coverage] == ["dynamic_slice"]


def test_integer_identity_is_free() -> None:
    lowered = lower_jaxpr(trace_function(lambda x: jnp.tril(x), (rand(4, 4),)))
    assert not [k for k in lowered.program.kernels if k.name.startswith("add")]
