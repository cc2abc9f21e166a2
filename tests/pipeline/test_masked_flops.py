"""The FLOPs check's masked work (Note [Masked FLOPs] in solar/pipeline/prepare.py): a
hand-written causal mask leaves the masked-out attention products uncharged, torch's
FLOP counter charges the dense ``bmm``, and the check subtracts exactly the difference,
so neither a forward nor a training step reads as a false shortfall."""

from __future__ import annotations

from pathlib import Path

import pytest

import solar
from solar.ir import parse_program
from solar.pipeline.prepare import masked_contraction_flops

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

B, H, T, DH = 2, 2, 32, 64  # head dim large against T: the products outweigh the softmax


class CausalAttention(torch.nn.Module):  # type: ignore[misc]
    """nanoGPT's attention, with the mask built in the forward in one of two spellings."""

    def __init__(self, spelling: str) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv = torch.nn.Linear(H * DH, 3 * H * DH)
        self.spelling = spelling

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (s.view(b, t, H, DH).transpose(1, 2) for s in self.qkv(x).split(c, dim=2))
        att = (q @ k.transpose(-2, -1)) * DH**-0.5
        if self.spelling == "masked_fill":
            att = att.masked_fill(torch.tril(torch.ones(t, t)) == 0, float("-inf"))
        else:  # added: generate_square_subsequent_mask
            att = att + torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        return (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)


def _dense_less_triangle(products: int, row_sums: int) -> int:
    """FLOPs of ``products`` (B, H, T, T, DH) batched products and of ``row_sums``
    (B, H, T, T) product reductions over the upper triangle."""
    masked_pairs = T * T - T * (T + 1) // 2
    return (products * DH + row_sums) * 2 * B * H * masked_pairs


@pytest.mark.parametrize("spelling", ["masked_fill", "added"])
@pytest.mark.parametrize(("train", "products"), [(False, 2), (True, 6)])
def test_masked_attention_is_no_false_shortfall(spelling: str, train: bool, products: int) -> None:
    # forward: Q K^T and P V; a training step adds dP, dV, dQ and dK (dS is zero where
    # P is, so dQ = dS K and dK = dS^T Q skip the triangle too), and the softmax
    # backward's row sums of dP * P, a product reduced (SOLAR's contraction class)
    x = torch.randn(B, T, H * DH)
    report = solar.analyze(CausalAttention(spelling), (x,), validate="off", train=train)
    check = report.coverage.independent_flops
    assert check is not None
    assert check.masked_flops == _dense_less_triangle(products, row_sums=int(train))
    assert not check.shortfall, check
    assert check.solar_flops >= check.covered_flops - check.masked_flops


def test_an_unmasked_program_hides_no_flops() -> None:
    x = torch.randn(B, T, H * DH)
    report = solar.analyze(torch.nn.Linear(H * DH, 8), (x,), validate="off")
    check = report.coverage.independent_flops
    assert check is not None
    assert check.masked_flops == 0.0


MATMUL = Path(__file__).resolve().parents[2] / "samples" / "ir" / "matmul.alir"


def test_masked_flops_are_the_skipped_contraction_points() -> None:
    text = MATMUL.read_text()
    dense = parse_program(text)
    lower = parse_program(text.replace("C[i, j] += A[i, k] * B[k, j]",
                                       "if k <= i { C[i, j] += A[i, k] * B[k, j] }"))
    m = n = k = 4096
    skipped = 2 * n * (m * k - m * (m + 1) // 2)  # the pairs k > i, for every j
    assert masked_contraction_flops(dense, lower).evaluate({"M": m, "N": n, "K": k}) == skipped
    assert masked_contraction_flops(dense, dense).is_zero
