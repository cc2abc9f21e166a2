"""Higher-order operators (``torch.cond``...) are refused with E0515 (Note [Higher-order
ops] in solar/frontends/pytorch/instance.py), not a generic E0501."""

from __future__ import annotations

from pathlib import Path

import pytest

from solar.diagnostics import FrontendError
from solar.pipeline import AnalyzeOptions, analyze

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

_COND = "torch.cond(x.sum() {op} 0, lambda t: t.sin(), lambda t: t.cos() * 2, (x,))"
_WHILE = ("torch._higher_order_ops.while_loop(lambda i, t: i < 3, "
          "lambda i, t: (i + 1, t * 2), (torch.zeros((), dtype=torch.int64), x))[1]")

# (the forward's result, the operator named): the predicate takes either branch
CASES = [
    (_COND.format(op=">"), "cond"),
    (_COND.format(op="<"), "cond"),
    (_WHILE, "while_loop"),
]


@pytest.mark.parametrize(("expr", "name"), CASES)
def test_higher_order_operator_is_a_coded_error(tmp_path: Path, expr: str, name: str) -> None:
    src = tmp_path / "hop.py"
    src.write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n"
        f"    def forward(self, x):\n        return {expr}\n\n"
        "def get_inputs():\n    return [torch.ones(8, 8)]\n"
    )
    with pytest.raises(FrontendError) as err:
        analyze(src, AnalyzeOptions(validate="off"))
    assert err.value.code == "E0515"
    assert f"torch.{name}" in str(err.value)
