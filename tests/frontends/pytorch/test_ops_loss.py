"""Loss lowerings (ops_loss.py) against torch, for every reduction."""

from __future__ import annotations

from typing import Any

import pytest
from nn_opcheck import check_op

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

A = torch.ops.aten
REDUCTIONS = [0, 1, 2]  # none, mean, sum


@pytest.fixture
def pair() -> tuple[Any, Any]:
    torch.manual_seed(0)
    return torch.randn(3, 5), torch.randn(3, 5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("op", "extra"),
    [
        (A.mse_loss.default, ()),
        (A.l1_loss.default, ()),
        (A.smooth_l1_loss.default, (0.5,)),
        (A.smooth_l1_loss.default, (0.0,)),
        (A.huber_loss.default, (0.7,)),
    ],
)
def test_regression_losses(
    op: object, extra: tuple[Any, ...], reduction: int, pair: tuple[Any, Any]
) -> None:
    x, y = pair
    check_op(op, x, y, reduction, *extra)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_classification_losses(reduction: int, pair: tuple[Any, Any]) -> None:
    x, y = pair
    p, t, w = torch.rand(3, 5) * 0.9 + 0.05, torch.rand(3, 5), torch.rand(5) + 0.5
    check_op(A.binary_cross_entropy.default, p, t, None, reduction)
    check_op(A.binary_cross_entropy.default, p, t, w, reduction)
    check_op(A.binary_cross_entropy_with_logits.default, 3 * x, t, w, torch.rand(5), reduction)
    check_op(A.binary_cross_entropy_with_logits.default, 3 * x, t, None, None, reduction)
    check_op(A.soft_margin_loss.default, x, torch.sign(y), reduction)
    check_op(A.kl_div.default, x, torch.rand(3, 5), reduction)
    check_op(A.kl_div.default, x, y, reduction, log_target=True)
    labels = torch.tensor([0, 4, 2])
    check_op(A.multi_margin_loss.default, x, labels, 1, 0.7, None, reduction)
    check_op(A.multi_margin_loss.default, x, labels, 2, 1.0, w, reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction: int, weighted: bool) -> None:
    logp = torch.randn(4, 5).log_softmax(1)
    target = torch.tensor([1, -100, 3, 0])
    w = torch.rand(5) + 0.5 if weighted else None
    check_op(A.nll_loss_forward.default, logp, target, w, reduction, -100)
    check_op(A.nll_loss_forward.default, logp, torch.tensor([1, 2, 3, 0]), w, reduction, 2)
    seg = torch.randn(2, 5, 3, 2).log_softmax(1)
    check_op(A.nll_loss2d_forward.default, seg, torch.randint(0, 5, (2, 3, 2)), w, reduction, 4)


def test_nll_loss_unbatched() -> None:
    check_op(A.nll_loss_forward.default, torch.randn(5), torch.tensor(3), None, 1, -100)


def test_xlogy() -> None:
    x = torch.rand(3, 4)
    x[0, 0] = 0.0
    check_op(A.xlogy.Tensor, x, torch.rand(4) + 0.1)


def test_half_mse_accumulates_in_f32(pair: tuple[Any, Any]) -> None:
    x, y = pair
    check_op(A.mse_loss.default, x.half(), y.half(), 1, rtol=1e-2, atol=1e-3)
