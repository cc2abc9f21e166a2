"""Elementwise lowerings (arithmetic, comparisons, logic, select, activations) vs torch."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings

torch = pytest.importorskip("torch")
F = torch.nn.functional

from strategies import broadcast_pair, shapes  # noqa: E402
from torch_check import check_program  # noqa: E402

pytestmark = pytest.mark.torch

BINARY = {
    "add": lambda a, b: a + b,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=-0.5),
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=2),
    "rsub": lambda a, b: torch.rsub(a, b, alpha=3),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b.abs() + 0.5),
    "div_floor": lambda a, b: torch.div(a, b.abs() + 0.5, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b.abs() + 0.5, rounding_mode="trunc"),
    "floor_divide": lambda a, b: torch.floor_divide(a, b.abs() + 0.5),
    "remainder": lambda a, b: torch.remainder(a, b.abs() + 0.5),
    "fmod": lambda a, b: torch.fmod(a, b.abs() + 0.5),
    "pow": lambda a, b: torch.pow(a.abs() + 0.1, b),
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "atan2": torch.atan2,
    "hypot": torch.hypot,
    "logaddexp": torch.logaddexp,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
    "and": lambda a, b: (a > 0) & (b > 0),
    "or": lambda a, b: torch.logical_or(a > 0, b),
    "xor": lambda a, b: torch.logical_xor(a > 0, b < 0),
    "where": lambda a, b: torch.where(a > b, a, b),
    "lerp": lambda a, b: torch.lerp(a, b, 0.3),
    "lerp_tensor": lambda a, b: torch.lerp(a, b, b.sigmoid()),
    "addcmul": lambda a, b: torch.addcmul(a, a, b, value=-0.5),
    "addcdiv": lambda a, b: torch.addcdiv(a, b, b.abs() + 1, value=2),
    "clamp_tensor": lambda a, b: torch.clamp(a, b - 1, b + 1),
    "clamp_min_tensor": lambda a, b: torch.clamp_min(a, b),
    "masked_fill": lambda a, b: a.masked_fill(b > 0, -3.0),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=4)
@given(pair=broadcast_pair())
def test_binary_broadcasting(name: str, pair: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    a_shape, b_shape = pair
    check_program(BINARY[name], torch.randn(a_shape), torch.randn(b_shape))


SCALAR = [
    lambda a: a + 2,
    lambda a: 2.5 - a,
    lambda a: a * -3,
    lambda a: a / 4,
    lambda a: 1 / (a + 5),
    lambda a: a**2,
    lambda a: a**3,
    lambda a: (a + 5) ** 0.5,
    lambda a: (a + 5) ** -1.5,
    lambda a: 2**a,
    lambda a: a > 0.5,
    lambda a: a == 1,
    lambda a: torch.where(a > 0, a, 0.0),
    lambda a: torch.where(a > 0, 1.0, a),
    lambda a: a.clamp(-0.5, 0.5),
    lambda a: a.clamp(min=0),
    lambda a: a.clamp(max=0.25),
    lambda a: torch.remainder(a, 0.75),
    lambda a: a % -0.75,
    lambda a: torch.fmod(a, 0.5),
    lambda a: a // 0.5,
    lambda a: torch.nan_to_num(a / (a > 0)),
    lambda a: torch.nan_to_num(torch.log(a), nan=1.0, posinf=2.0, neginf=-2.0),
]


@pytest.mark.parametrize("fn", SCALAR)
def test_scalar_operands(fn: object) -> None:
    check_program(fn, torch.randn(3, 5) * 3)


INT_OPS = [
    lambda n, m: n + m,
    lambda n, m: n * m - 3,
    lambda n, m: n // (m.abs() + 1),
    lambda n, m: n % (m.abs() + 1),
    lambda n, m: torch.div(n, m.abs() + 1, rounding_mode="trunc"),
    lambda n, m: n / (m.abs() + 1),
    lambda n, m: n * 0.5,
    lambda n, m: n.float() + m,
    lambda n, m: n > m,
    lambda n, m: torch.maximum(n, m),
    lambda n, m: (n > 0) + (m > 0),
    lambda n, m: n.abs(),
    lambda n, m: -n,
    lambda n, m: n.sign(),
    lambda n, m: n.sqrt(),
    lambda n, m: torch.where(n > m, n, m),
    lambda n, m: (n > 0) * (m > 0),
]


@pytest.mark.parametrize("fn", INT_OPS)
def test_integer_and_bool_promotion(fn: object) -> None:
    check_program(fn, torch.randint(-9, 9, (4, 3)), torch.randint(-9, 9, (3,)))


UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "sqrt": lambda x: (x.abs() + 0.1).sqrt(),
    "rsqrt": lambda x: (x.abs() + 0.1).rsqrt(),
    "exp": torch.exp,
    "exp2": torch.exp2,
    "log": lambda x: (x.abs() + 0.1).log(),
    "log2": lambda x: (x.abs() + 0.1).log2(),
    "log1p": lambda x: x.abs().log1p(),
    "expm1": torch.expm1,
    "erf": torch.erf,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "sign": torch.sign,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "round_dec": lambda x: torch.round(x, decimals=2),
    "trunc": torch.trunc,
    "frac": torch.frac,
    "reciprocal": lambda x: (x.abs() + 0.5).reciprocal(),
    "square": torch.square,
    "atan": torch.atan,
    "asin": lambda x: torch.asin(x.clamp(-0.9, 0.9)),
    "isnan": torch.isnan,
    "isinf": lambda x: torch.isinf(x / x.round()),
    "not": lambda x: ~(x > 0),
    "logical_not": lambda x: torch.logical_not(x),
    "relu": F.relu,
    "relu6": lambda x: F.relu6(4 * x),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x, 0.7),
    "selu": F.selu,
    "celu": lambda x: F.celu(x, 0.6),
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "softplus": lambda x: F.softplus(x, beta=2.0, threshold=1.0),
    "softsign": F.softsign,
    "hardsigmoid": lambda x: F.hardsigmoid(3 * x),
    "hardswish": lambda x: F.hardswish(3 * x),
    "hardtanh": lambda x: F.hardtanh(x, -0.4, 0.6),
    "logsigmoid": F.logsigmoid,
    "threshold": lambda x: F.threshold(x, 0.3, -2.0),
    "glu": lambda x: F.glu(x, dim=0),
    "tanhshrink": F.tanhshrink,
    "hardshrink": F.hardshrink,
    "softshrink": F.softshrink,
    "rrelu_eval": lambda x: F.rrelu(x, training=False),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=3)
@given(shape=shapes(1, 3))
def test_unary(name: str, shape: tuple[int, ...]) -> None:
    if name == "glu":
        shape = (2 * shape[0], *shape[1:])
    check_program(UNARY[name], torch.randn(shape) * 2)


def test_prelu_per_channel_and_shared() -> None:
    check_program(F.prelu, torch.randn(2, 3, 4), torch.rand(3))
    check_program(F.prelu, torch.randn(2, 3, 4), torch.rand(1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_other_float_types(dtype: Any) -> None:
    tol = 1e-2 if dtype != torch.float64 else 1e-9
    check_program(
        lambda a, b: (F.gelu(a) * b + 1).sigmoid(),
        torch.randn(3, 4, dtype=dtype),
        torch.randn(4, dtype=dtype),
        rtol=tol,
        atol=tol,
    )


def test_inplace_chain_creates_versions() -> None:
    low = check_program(lambda a: a.mul(2).add_(1).relu_().clamp_(max=2.0), torch.randn(3, 4))
    assert [k.name for k in low.program.kernels] == ["mul", "add", "relu", "clamp"]


def test_inf_literal_roundtrips() -> None:
    check_program(lambda a: a.masked_fill(a > 0, -math.inf).exp(), torch.randn(4))


@pytest.mark.parametrize(
    "unary",
    [torch.sqrt, torch.exp, torch.log, torch.rsqrt, torch.sigmoid, torch.tanh, torch.neg],
)
@pytest.mark.parametrize("value", [4, 2.5])
def test_unary_of_a_zero_dim_constant(unary: Any, value: float) -> None:
    """A 0-d constant is inlined as a number where an operand may be one; a unary op
    needs its tensor (RAFT scales its correlation by ``torch.sqrt(torch.tensor(C))``)."""
    check_program(
        lambda x: x / unary(torch.tensor(value)) + unary(torch.tensor(value)), torch.randn(2, 3)
    )
