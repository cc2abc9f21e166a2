"""Matmul family, copies/casts and factories lowered and validated against torch."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.ir import Reduce
from solar.ir.traversal import walk_stmts

torch = pytest.importorskip("torch")
F = torch.nn.functional

from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch

side = st.integers(1, 5)
scalar = st.sampled_from([0.0, 1.0, 0.5, -2.0])


@settings(max_examples=10)
@given(m=side, k=side, n=side, b=st.integers(1, 3))
def test_mm_bmm_match_torch(m: int, k: int, n: int, b: int) -> None:
    check_program(lambda x, y: x @ y, torch.randn(m, k), torch.randn(k, n))
    check_program(torch.bmm, torch.randn(b, m, k), torch.randn(b, k, n))


@pytest.mark.parametrize(("m", "k", "n"), [(32, 16, 8), (17, 24, 40)])
def test_int_mm_is_an_int8_contraction(m: int, k: int, n: int) -> None:
    # torch._int_mm (int8 x int8 -> int32) is mm with widening reads: exact, 2*m*k*n ops.
    from solar.einsum import lift_to_einsum

    a = torch.randint(-128, 128, (m, k), dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), dtype=torch.int8)
    lowered = check_program(torch._int_mm, a, b, rtol=0, atol=0)
    graph = lift_to_einsum(lowered.program)
    assert sum(node.flops.evaluate({}) for node in graph.nodes) == 2 * m * k * n


@settings(max_examples=10)
@given(m=side, k=side, n=side, alpha=scalar, beta=scalar, bias_rank=st.integers(0, 2))
def test_addmm_alpha_beta(
    m: int, k: int, n: int, alpha: float, beta: float, bias_rank: int
) -> None:
    bias = torch.randn(tuple((m, n)[2 - bias_rank + j] for j in range(bias_rank)))
    check_program(
        lambda c, x, y: torch.addmm(c, x, y, beta=beta, alpha=alpha),
        bias,
        torch.randn(m, k),
        torch.randn(k, n),
    )


@settings(max_examples=8)
@given(b=st.integers(1, 3), m=side, k=side, n=side, alpha=scalar, beta=scalar)
def test_baddbmm_addbmm(b: int, m: int, k: int, n: int, alpha: float, beta: float) -> None:
    x, y = torch.randn(b, m, k), torch.randn(b, k, n)
    check_program(
        lambda c, x, y: torch.baddbmm(c, x, y, beta=beta, alpha=alpha), torch.randn(b, m, n), x, y
    )
    check_program(
        lambda c, x, y: torch.addbmm(c, x, y, beta=beta, alpha=alpha), torch.randn(m, n), x, y
    )


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((4,), (4,)),
        ((3, 4), (4,)),
        ((4,), (4, 5)),
        ((2, 3, 4), (4, 5)),
        ((2, 1, 3, 4), (3, 4, 2)),
        ((5, 4), (2, 4, 3)),
        ((1, 1), (1, 1)),
    ],
)
def test_matmul_broadcasting(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    check_program(torch.matmul, torch.randn(*a_shape), torch.randn(*b_shape))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, w, b: F.linear(x, w, b),
        lambda x, w, b: F.linear(x, w),
        lambda x, w, b: torch.einsum("bsk,nk->bsn", x, w),
        lambda x, w, b: torch.einsum("bsk,bsk->b", x, x),
        lambda x, w, b: torch.outer(b, w[0]),
        lambda x, w, b: torch.addr(torch.ones(5, 4), b, w[0], beta=0.5, alpha=2.0),
        lambda x, w, b: torch.addmv(b, w, x[0, 0], alpha=2.0),
        lambda x, w, b: torch.mv(w, x[1, 2]),
        lambda x, w, b: torch.dot(w[0], w[1]),
        lambda x, w, b: torch.vdot(w[0], w[1]),
        lambda x, w, b: x * 3.0,
    ],
)
def test_linear_einsum_vectors(fn: object) -> None:
    check_program(fn, torch.randn(2, 3, 4), torch.randn(5, 4), torch.randn(5))


def test_matmul_is_one_contraction_kernel() -> None:
    low = check_program(torch.mm, torch.randn(3, 4), torch.randn(4, 5))
    (kernel,) = low.program.kernels
    reduces = [s for s, _ in walk_stmts(kernel.body) if isinstance(s, Reduce)]
    assert [r.op for r in reduces] == ["+"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_low_and_high_precision_matmul(dtype: Any) -> None:
    tol = 2e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-6
    check_program(
        lambda x, y, c: torch.addmm(c, x, y),
        torch.randn(3, 8, dtype=dtype),
        torch.randn(8, 5, dtype=dtype),
        torch.randn(5, dtype=dtype),
        rtol=tol,
        atol=tol,
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.clone(),
        lambda x: x.t().contiguous(),
        lambda x: x.to(torch.float16),
        lambda x: x.to(torch.bfloat16),
        lambda x: x.double(),
        lambda x: (x * 4).long(),
        lambda x: (x * 4).to(torch.int8),
        lambda x: x.bool(),
        lambda x: (x > 0).float(),
        lambda x: torch.zeros(2, 3) + 1,
        lambda x: torch.ones_like(x) * x,
        lambda x: torch.full((4,), 2.5) + x[0],
        lambda x: x.new_zeros(3),
        lambda x: x.new_full((2, 2), 7.0),
        lambda x: torch.zeros(3, dtype=torch.bool),
        lambda x: torch.arange(7),
        lambda x: torch.arange(2, 11, 3),
        lambda x: torch.arange(0.0, 1.0, 0.125),
        lambda x: torch.linspace(-1, 1, 9),
        lambda x: torch.eye(3, 4),
        lambda x: x.clone().fill_(3.0),
        lambda x: x.clone().zero_(),
        lambda x: torch.full_like(x, -1.0),
    ],
)
def test_copies_casts_and_factories(fn: object) -> None:
    check_program(fn, torch.randn(4, 4))
