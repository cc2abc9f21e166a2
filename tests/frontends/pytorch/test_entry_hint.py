"""A model file without ``Model`` names the nn.Modules it defines and the ``--entry``
that analyses them (issue 31), through the CLI as a user meets it."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_cli

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

HEAD = "import torch\nimport torch.nn as nn\nfrom torch.nn import Linear\n\n"
NET = """class {name}(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = Linear(8, 4)

    def forward(self, x):
        return self.fc(x)

"""
INPUTS = "def get_inputs():\n    return [torch.randn(2, 8)]\n"


@pytest.mark.parametrize(("names", "note"), [
    (["TinyNet"], "the file defines one nn.Module, `TinyNet`: analyse it with --entry TinyNet"),
    (["Block", "Net"], "the file defines the nn.Modules `Block`, `Net`: pick one with "
                       "--entry NAME (the outermost, usually --entry Net)"),
])  # fmt: skip
def test_no_model_suggests_the_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], names: list[str], note: str
) -> None:
    path = tmp_path / "net.py"
    path.write_text(HEAD + "".join(NET.format(name=n) for n in names) + INPUTS)
    r = run_cli(capsys, "analyze", str(path), "-q")
    assert r.code == 1
    assert r.err.startswith("error[E0502]: net.py has no `Model`")
    assert f"  = note: {note}\n" in r.err  # `Linear`, imported, is not suggested
    entry = names[-1]
    ok = run_cli(capsys, "analyze", str(path), "-q", "--entry", entry, "--validate", "off")
    assert ok.code == 0, ok.err
    assert f" — {entry} (" in ok.out.splitlines()[0]
