"""Backward lowerings' FLOPs and bytes by hand (docs/bounds.md §2-3 rules).

Each row lowers one backward call (validated against torch by `check_op`), then checks
its FLOPs and its per-kernel bytes against arithmetic written out here.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from nn_opcheck import check_op

from solar.bounds import evaluate_costs
from solar.einsum import lift_to_einsum

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = torch.ops.aten
F32 = 4


def _cost(program: object) -> tuple[float, float]:
    c = evaluate_costs(lift_to_einsum(program))  # type: ignore[arg-type]
    return float(c.group_flops.sum()), float(c.read_bytes.sum() + c.written_bytes.sum())


def _threshold() -> object:
    return check_op(A.threshold_backward.default, torch.randn(3, 5), torch.randn(3, 5), 0.0)


def _sigmoid() -> object:
    return check_op(A.sigmoid_backward.default, torch.randn(4, 6), torch.rand(4, 6))


def _gelu() -> object:
    return check_op(A.gelu_backward.default, torch.randn(4, 6), torch.randn(4, 6))


def _softmax() -> object:
    return check_op(
        A._softmax_backward_data.default,
        torch.randn(3, 4, 5),
        torch.rand(3, 4, 5),
        1,
        torch.float32,
    )


def _mse() -> object:
    return check_op(
        A.mse_loss_backward.default, torch.tensor(1.5), torch.randn(4, 6), torch.randn(4, 6), 1
    )


def _conv() -> object:
    x, w = torch.randn(2, 4, 7, 6), torch.randn(6, 4, 3, 3)
    y = A.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    return check_op(
        A.convolution_backward.default,
        torch.randn_like(y),
        x,
        w,
        [6],
        [1, 1],
        [0, 0],
        [1, 1],
        False,
        [0, 0],
        1,
        [True, True, True],
        rtol=1e-4,
        atol=1e-4,
    )


def _attention() -> object:
    q, k, v = torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8), torch.randn(2, 3, 6, 8)
    out, lse = A._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, False)
    return check_op(
        A._scaled_dot_product_flash_attention_for_cpu_backward.default,
        torch.randn_like(out),
        q,
        k,
        v,
        out,
        lse,
        0.0,
        False,
        rtol=1e-4,
        atol=1e-4,
    )


def _gqa_attention() -> object:
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 2, 6, 8), torch.randn(2, 2, 6, 8)
    out, lse = A._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, False)
    g = torch.randn_like(out)
    return check_op(
        A._scaled_dot_product_flash_attention_for_cpu_backward.default,
        *(g, q, k, v, out, lse, 0.0, False),
        rtol=1e-4,
        atol=1e-4,
    )


def _layer_norm() -> object:
    x, w, b = torch.randn(4, 6), torch.rand(6) + 0.5, torch.randn(6)
    _, mean, rstd = A.native_layer_norm.default(x, [6], w, b, 1e-5)
    return check_op(
        A.native_layer_norm_backward.default,
        torch.randn(4, 6),
        x,
        [6],
        mean,
        rstd,
        w,
        b,
        [True, True, True],
        rtol=1e-4,
        atol=1e-4,
    )


_B, _H, _L, _E = 2, 3, 6, 8
CASES: list[tuple[str, Callable[[], object], float, float]] = [
    # select(x > 0, g, 0): compare + select per element; the cheaper branch reads no g
    ("threshold", _threshold, 2 * 15, F32 * (15 + 15)),
    # g * y * (1 - y): 3 per element; reads g, y, writes dx
    ("sigmoid", _sigmoid, 3 * 24, F32 * 3 * 24),
    # cdf: mul, erf, add, mul; pdf: mul, mul, exp, mul; g * (cdf + x * pdf): 3
    ("gelu", _gelu, 11 * 24, F32 * 3 * 24),
    # s = sum(g * y) (multiply-add: 2), dx = y * (g - s) (2)
    ("softmax", _softmax, 4 * 60, F32 * 3 * 60),
    # 2/N * (x - t) * g: sub, mul, mul; the scalar g read once
    ("mse", _mse, 3 * 24, F32 * (3 * 24 + 1)),
    # dx: 2 N K C R S OH OW (every tap lands inside, no padding), dW: the same, db: N K OH OW;
    # one launch reads g, x, w and writes dx, dW, db once each
    (
        "conv",
        _conv,
        2 * (2 * 2 * 6 * 4 * 9 * 5 * 4) + 2 * 6 * 5 * 4,
        F32 * (240 + 336 + 216 + 336 + 216 + 6),
    ),
    # per head: five contractions 10 L S E; P: scale, sub, exp (3 L S); dS: sub, mul (2 L S);
    # D: 2 L E; dQ, dK scaled once per element (L E + S E)
    (
        "attention",
        _attention,
        _B * _H * (10 * _L * _L * _E + 5 * _L * _L + 2 * _L * _E + _L * _E + _L * _E),
        F32 * _B * _H * (5 * _L * _E + _L + 3 * _L * _E),
    ),
    # grouped-query (4 query heads over 2 key heads): the expanded attention's work per
    # query head, dK scaled once per key element; q, dO, O, dQ, lse per query head and
    # k, v, dK, dV per key head, each once
    (
        "attention_gqa",
        _gqa_attention,
        _B * 4 * (10 * _L * _L * _E + 5 * _L * _L + 2 * _L * _E + _L * _E) + _B * 2 * _L * _E,
        F32 * (_B * 4 * (4 * _L * _E + _L) + _B * 2 * 4 * _L * _E),
    ),
    # per element: a (2), b (5: gw, xhat 2, mul, combine), dx (9), dW (4), db (1)
    ("layer_norm", _layer_norm, 21 * 24, F32 * (24 + 24 + 4 + 4 + 6 + 24 + 6 + 6)),
]


@pytest.mark.parametrize(("name", "build", "flops", "nbytes"), CASES, ids=[c[0] for c in CASES])
def test_backward_costs_by_hand(
    name: str, build: Callable[[], object], flops: float, nbytes: float
) -> None:
    assert _cost(build()) == (flops, nbytes)
