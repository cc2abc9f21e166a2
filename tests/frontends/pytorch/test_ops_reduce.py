"""Reductions, softmax-like ops and scans lowered and validated against torch."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
F = torch.nn.functional

from strategies import dims_for, shapes  # noqa: E402
from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch

MULTI_DIM = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k),
    "mean": lambda x, d, k: x.mean(d, keepdim=k),
    "amax": lambda x, d, k: x.amax(d, keepdim=k),
    "amin": lambda x, d, k: x.amin(d, keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k),
    "var_c0": lambda x, d, k: x.var(d, correction=0, keepdim=k),
    "std": lambda x, d, k: x.std(d, keepdim=k),
    "var_mean": lambda x, d, k: torch.var_mean(x, d, keepdim=k),
    "std_mean": lambda x, d, k: torch.std_mean(x, d, correction=0, keepdim=k),
    "norm2": lambda x, d, k: torch.linalg.vector_norm(x, 2, d, keepdim=k),
    "norm1": lambda x, d, k: torch.linalg.vector_norm(x, 1, d, keepdim=k),
    "norm_inf": lambda x, d, k: torch.linalg.vector_norm(x, float("inf"), d, keepdim=k),
    "norm_ninf": lambda x, d, k: torch.linalg.vector_norm(x, float("-inf"), d, keepdim=k),
    "norm0": lambda x, d, k: torch.linalg.vector_norm(x.round(), 0, d, keepdim=k),
    "norm3": lambda x, d, k: torch.linalg.vector_norm(x, 3.0, d, keepdim=k),
    "norm_old": lambda x, d, k: x.norm(p=2, dim=d, keepdim=k),
    "logsumexp": lambda x, d, k: torch.logsumexp(x, d, keepdim=k),
    "all": lambda x, d, k: (x > -1).all(d[0], keepdim=k),
    "any": lambda x, d, k: (x > 1).any(d[0], keepdim=k),
    "count_nonzero": lambda x, d, k: torch.count_nonzero(x.round(), d),
    "nansum": lambda x, d, k: torch.nansum(x.log(), d, keepdim=k),
    "prod": lambda x, d, k: x.prod(d[0], keepdim=k),
    "max_dim": lambda x, d, k: x.max(d[0], keepdim=k),
    "min_dim": lambda x, d, k: x.min(d[0], keepdim=k),
    "argmax": lambda x, d, k: x.argmax(d[0], keepdim=k),
    "argmin": lambda x, d, k: x.argmin(d[0], keepdim=k),
    "aminmax": lambda x, d, k: torch.aminmax(x, dim=d[0], keepdim=k),
    "aminmax_int": lambda x, d, k: torch.aminmax((x * 3).int(), dim=d[0], keepdim=k),
    "int_sum": lambda x, d, k: (x * 3).int().sum(d, keepdim=k),
    "bool_sum": lambda x, d, k: (x > 0).sum(d, keepdim=k),
    "sum_f64": lambda x, d, k: x.sum(d, keepdim=k, dtype=torch.float64),
}


@pytest.mark.parametrize("name", sorted(MULTI_DIM))
@settings(max_examples=4)
@given(data=st.data(), shape=shapes(1, 3), keepdim=st.booleans())
def test_reduce_over_dims(
    name: str, data: st.DataObject, shape: tuple[int, ...], keepdim: bool
) -> None:
    dims = data.draw(dims_for(len(shape)))
    fn: Any = MULTI_DIM[name]
    check_program(lambda x: fn(x, dims, keepdim), torch.randn(shape), rtol=1e-4, atol=1e-4)


FULL = [
    lambda x: x.sum(),
    lambda x: x.mean(),
    lambda x: x.prod(),
    lambda x: x.max(),
    lambda x: x.min(),
    lambda x: x.argmax(),
    lambda x: x.argmin(),
    lambda x: x.var(),
    lambda x: x.std(unbiased=False),
    lambda x: x.norm(),
    lambda x: x.norm(p="fro"),
    lambda x: (x > 0).all(),
    lambda x: (x > 0).any(),
    lambda x: torch.count_nonzero(x > 0),
    lambda x: torch.var_mean(x),
    lambda x: x.amax(),
    lambda x: torch.aminmax(x),
    lambda x: torch.aminmax(x, keepdim=True),
]


@pytest.mark.parametrize("fn", FULL)
def test_full_reductions(fn: object) -> None:
    check_program(fn, torch.randn(3, 4, 2))


def test_argmax_ties_take_first_index() -> None:
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0]])
    check_program(lambda t: (t.argmax(1), t.argmin(1), t.max(1), t.argmax()), x)


def test_arg_reductions_return_the_first_nan() -> None:
    """torch's argmax/argmin and max.dim/min.dim treat NaN as the extreme (Note [Arg-reduce
    NaN]); the lowering returned the end of the row for rows holding one."""
    nan = float("nan")
    x = torch.tensor([[1.0, nan, 3.0, nan], [2.0, 5.0, 2.0, 1.0], [nan, 0.0, 0.0, 0.0]])
    check_program(lambda t: (t.argmax(1), t.argmin(1), t.max(1), t.min(0), t.argmax()), x)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, d: F.softmax(x, d),
        lambda x, d: F.log_softmax(x, d),
        lambda x, d: F.softmin(x, d),
        lambda x, d: F.softmax(x.half(), d, dtype=torch.float32),
        lambda x, d: torch.cumsum(x, d),
        lambda x, d: torch.cumprod(x, d),
        lambda x, d: torch.logcumsumexp(x, d),
        lambda x, d: torch.cummax(x, d),
        lambda x, d: torch.cummin(x, d),
        lambda x, d: torch.cumsum(x > 0, d),
        lambda x, d: torch.cumsum(x.flip(d), d).flip(d),
        lambda x, d: torch.cumsum(x, d) - x,
    ],
)
@settings(max_examples=4)
@given(data=st.data(), shape=shapes(1, 3))
def test_softmax_and_scans(fn: Any, data: st.DataObject, shape: tuple[int, ...]) -> None:
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_program(lambda x: fn(x, dim), torch.rand(shape) + 0.5, rtol=1e-3, atol=1e-4)


def test_softmax_of_masked_rows() -> None:
    x = torch.randn(3, 4)
    mask = torch.tensor([[True, False, True, True]] * 3)
    check_program(lambda t: t.masked_fill(~mask, float("-inf")).softmax(-1), x)


def test_scan_loop_is_seq_and_outermost() -> None:
    low = check_program(lambda x: x.cumsum(1), torch.randn(3, 5))
    (kernel,) = low.program.kernels
    seq_loops = [s for s in kernel.body if getattr(s, "seq", False)]
    assert len(seq_loops) == 1


# Zero-size operands: a reduction whose output is empty emits no loops, and a reduction
# over an empty axis writes its identity; every output is written (E0217 otherwise).
EMPTY_REDUCTIONS = {
    "sum_empty_rows": lambda x: x[:, :0, :].sum(-1),
    "sum_over_empty": lambda x: x[:, :, :0].sum(-1),
    "amax_empty_rows": lambda x: x[:, :0, :].amax(-1),
    "mean_empty_rows": lambda x: x[:0].mean(1),
    "argmax_empty_rows": lambda x: x[:, :0, :].argmax(-1),
    "cumsum_empty": lambda x: x[:, :0].cumsum(1),
}


@pytest.mark.parametrize("name", sorted(EMPTY_REDUCTIONS))
def test_reductions_of_zero_size_operands_write_every_output(name: str) -> None:
    lowered = check_program(EMPTY_REDUCTIONS[name], torch.randn(2, 3, 4))
    assert lowered.program.kernels
