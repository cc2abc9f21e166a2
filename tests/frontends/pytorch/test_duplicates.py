"""A PyTorch program that computes the same values twice is charged once.

Note [Duplicate kernels] in `solar.ir.passes`: ``x.pow(2)`` written twice runs two
kernels in eager mode, but a program needs the squares once; the bounds read the first
kernel's result and drop the second. Two random draws are not the same values, however
alike their kernels.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

R, C = 64, 256

MODEL = """
import torch, torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def forward(self, x):
        return {body}
def get_inputs():
    return [torch.randn({R}, {C})]
"""

# name: (forward's return expression, duplicate kernels, FLOPs as analysed)
CASES: dict[str, tuple[str, int, int]] = {
    # squares (R*C), their sum (R*C adds), their mean (R*C adds + R divides), the add (R):
    # one square kernel fewer than written (R*C = 16,384 FLOPs less)
    "pow_twice": ("x.pow(2).sum(-1) + x.pow(2).mean(-1)", 1, 3 * R * C + 2 * R),
    # two dropouts draw two masks, filled alike for the bounds but not the same values:
    # both kept (each the mask's scale and the multiply, R*C FLOPs each; then the add)
    "two_dropouts": (
        "F.dropout(x, 0.5, training=True) + F.dropout(x, 0.5, training=True)",
        0,
        5 * R * C,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_repeated_work_is_charged_once(tmp_path: Path, case: str) -> None:
    body, duplicates, flops = CASES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(MODEL.format(body=body, R=R, C=C))
    report = analyze(path, AnalyzeOptions(archs=("H100_SXM",), cache="cold"))
    assert report.validation.status == "passed"
    assert report.ir.duplicate_kernels == duplicates
    assert report.flops == flops
