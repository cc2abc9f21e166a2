"""Uncovered primitives: reported with their byte share, outputs become program inputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from jax_check import check_fn, rand

from solar.frontends.jaxfe import lower_jaxpr, trace_function

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytestmark = pytest.mark.jax


def test_approx_top_k_is_uncovered_and_program_still_validates() -> None:
    def f(x: Any) -> Any:
        s = jax.lax.approx_max_k(x * 2.0, 2)[0]
        return s + 1.0, x.sum()

    lowered = check_fn(f, rand(4, 8), covered=False)
    (op,) = lowered.coverage
    assert op.target == "approx_top_k"
    assert op.count == 1
    assert 0.0 < op.bytes_share < 1.0
    assert "no lowering" in op.reason
    assert lowered.uncovered_values  # its values and indices, from the real run
    roles = {t.name: t.role for t in lowered.program.tensors}
    for extra in lowered.uncovered_values:
        assert extra.name.startswith("u")
        assert "_approx_top_k" in extra.name
        assert roles[extra.name] == "input"
    assert lowered.ops_seen == lowered.ops_lowered + 1


def test_uncovered_inside_scan_uncovers_the_scan() -> None:
    def f(xs: Any) -> Any:
        return jax.lax.scan(lambda c, x: (c + jax.lax.approx_max_k(x, 3)[0], c), jnp.zeros(3), xs)

    lowered = check_fn(f, rand(4, 3), covered=False)
    assert [u.target for u in lowered.coverage] == ["scan"]
    assert "approx_top_k" in lowered.coverage[0].reason
    # the note that carries it to the report (Note [What stopped a loop])
    assert any(n.startswith("scan uncovered:") and "`approx_top_k`" in n for n in lowered.notes)


def test_a_loop_names_the_inner_equation_that_stopped_it() -> None:
    def f(x: Any) -> Any:  # a while_loop whose trip count depends on the values
        def body(c: Any, _: Any) -> Any:
            c = jax.lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0 + 1.0, c)
            return c, c.sum()

        return jax.lax.scan(body, x, None, length=2)

    lowered = check_fn(f, rand(5), covered=False)
    (op,) = lowered.coverage
    assert op.target == "scan"
    note = next(n for n in lowered.notes if n.startswith("scan uncovered:"))
    assert "`while`: while_loop without a static trip count" in note, note


def test_random_ops_are_uncovered_but_downstream_lowered() -> None:
    def f(x: Any, key: Any) -> Any:
        noise = jax.random.normal(jax.random.wrap_key_data(key), x.shape)
        return x + noise

    key = np.asarray(jax.random.key_data(jax.random.key(0)))
    lowered = lower_jaxpr(trace_function(f, (rand(3, 2), key)))
    assert not lowered.fully_covered
    assert lowered.uncovered_share <= 1.0
    kernels = [k.name for k in lowered.program.kernels]
    assert kernels[-1].startswith("add")  # x + noise is still a kernel


def test_effects_free_dead_code_is_skipped() -> None:
    def f(x: Any) -> Any:
        _unused = jax.lax.approx_max_k(x, 2)
        return x * 2.0

    lowered = check_fn(f, rand(5))
    assert lowered.fully_covered
    assert len(lowered.program.kernels) == 1


# (name, function, input, counted): an uncovered equation gets XLA's count for it alone
# (its exact value is XLA's, version-dependent: erf_inv 1365 on jax 0.10.2);
# loops (XLA costs one body) and library calls (no FLOPs in XLA's analysis) stay
# unknown, as does an op XLA gives no estimate for.
COUNTED: list[tuple[str, Any, np.ndarray, bool]] = [
    ("erf_inv", lambda x: jax.lax.erf_inv(jnp.tanh(x) * 0.5), rand(5, 7), True),
    ("approx_top_k", lambda x: jax.lax.approx_max_k(x, 3)[0], rand(5, 7), False),
    ("eigh", lambda x: jnp.linalg.eigh(x @ x.T)[0], rand(5, 5), False),
    (
        "while",
        lambda x: jax.lax.while_loop(lambda s: s.sum() < 100.0, lambda s: s * 2.0, x),
        np.abs(rand(5, 7)) + 1.0,
        False,
    ),
]


@pytest.mark.parametrize(("target", "fn", "x", "counted"), COUNTED, ids=[c[0] for c in COUNTED])
def test_uncovered_ops_get_xla_flops_for_them_alone(
    target: str, fn: Any, x: np.ndarray, counted: bool
) -> None:
    from solar.report.sections import coverage_info

    lowered = lower_jaxpr(trace_function(fn, (x,)), count_uncovered=True)
    (op,) = [u for u in lowered.coverage if u.target == target]
    share = coverage_info(lowered.ops_seen, lowered.coverage, solar_flops=100.0)
    if not counted:
        assert op.counted_flops is None
        assert share.uncovered_flops_fraction is None
    else:
        assert op.counted_flops is not None
        assert op.counted_flops >= x.size  # at least one operation per element
        flops = op.counted_flops
        assert share.uncovered_flops_fraction == pytest.approx(flops / (100.0 + flops))
    # the default lowering (symbolic re-captures) does not ask XLA
    assert all(u.counted_flops is None for u in lower_jaxpr(trace_function(fn, (x,))).coverage)
