"""The independent FLOP check's padding accounting (solar/frontends/pytorch/flops.py):
taps over zero padding of a convolution, and taps of a transposed convolution that
write the outputs its ``padding`` crops, counted from the shapes and checked against a
brute-force enumeration and against SOLAR's own count (no false shortfall)."""

from __future__ import annotations

import pytest

import solar
from solar.frontends.pytorch.flops import padding_flops

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

# (input size, kernel, stride, padding, dilation, output_padding)
TRANSPOSED = [
    (4, 3, 2, 1, 1, 1),
    (5, 4, 2, 1, 1, 0),
    (6, 3, 1, 0, 1, 0),
    (3, 3, 3, 2, 2, 2),
    (7, 2, 2, 0, 1, 0),
]


def _brute_kept(n: int, k: int, s: int, p: int, d: int, op: int) -> int:
    out = (n - 1) * s - 2 * p + d * (k - 1) + op + 1
    return sum(1 for i in range(n) for t in range(k) if 0 <= i * s - p + t * d < out)


@pytest.mark.parametrize("case", TRANSPOSED)
def test_transposed_cropped_taps_match_enumeration(case: tuple[int, ...]) -> None:
    n, k, s, p, d, op = case
    cin, cout, batch = 3, 2, 2
    total = 2 * batch * cin * cout * (n * k) ** 2  # FlopCounterMode: every input x tap
    args = ((batch, cin, n, n), (cin, cout, k, k), None, (s, s), (p, p), (d, d), True, (op, op))
    kept = 2 * batch * cin * cout * _brute_kept(n, k, s, p, d, op) ** 2
    assert padding_flops("convolution", args, total) == total - kept


@pytest.mark.parametrize("case", TRANSPOSED)
def test_transposed_convolution_is_no_false_shortfall(case: tuple[int, ...]) -> None:
    n, k, s, p, d, op = case
    model = torch.nn.ConvTranspose2d(3, 2, k, stride=s, padding=p, dilation=d,
                                     output_padding=op, bias=False)
    report = solar.analyze(model, (torch.randn(2, 3, n, n),), validate="off")
    check = report.coverage.independent_flops
    assert check is not None
    assert not check.shortfall, check
    assert check.solar_flops >= check.covered_flops - check.padding_flops
