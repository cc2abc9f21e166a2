"""Any module, any inputs: ``--entry`` (class, function, ``pkg.mod:attr`` without a
file), ``--inputs`` (.pt dict/list, .npz positional and named), ``--input-shape``,
keyword inputs and dataclass/dict outputs; the CLI and `solar.analyze` agree."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_cli

import solar
from solar.diagnostics import UsageError
from solar.frontends.inputs import InputShape, parse_input_shape
from solar.frontends.pytorch.loader import inputs_from_shapes

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

MODELS = '''
import dataclasses
import torch
from torch import nn


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    extras: dict


class TinyNet(nn.Module):
    """No `Model`, no get_inputs: needs --input-shape or --inputs."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.fc = nn.Linear(8, width)

    def forward(self, x, scale=None):
        y = torch.relu(self.fc(x))
        if scale is not None:
            y = y * scale
        return Out(y, {"mean": y.mean(), "pair": (x.sum(), y.amax())})


def matmul(a, b):
    return a @ b
'''


@pytest.fixture
def models_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "zoo_entry_models.py"
    path.write_text(MODELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return path


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    res = run_cli(capsys, "analyze", *args, "--format", "json", "-q")
    assert res.code == 0, res.err
    return json.loads(res.out)  # type: ignore[no-any-return]


def test_parse_input_shape_table() -> None:
    assert parse_input_shape("x=2,3,224,224:f32") == InputShape("x", (2, 3, 224, 224), "f32")
    assert parse_input_shape("4,8") == InputShape(None, (4, 8), "f32")
    assert parse_input_shape("ids=1,16:i64<1000") == InputShape("ids", (1, 16), "i64", 1000)
    assert parse_input_shape("s=:f64") == InputShape("s", (), "f64")
    for bad in ("x=2,,3", "x=2:f7", "=2", "x=a,b"):
        with pytest.raises(UsageError) as info:
            parse_input_shape(bad)
        assert info.value.code == "E0912"


def test_inputs_from_shapes_are_seeded_and_typed() -> None:
    specs = (InputShape(None, (2, 3)), InputShape("ids", (5,), "i64", 7))
    (a,), kw = inputs_from_shapes(specs)
    (a2,), kw2 = inputs_from_shapes(specs)
    assert torch.equal(a, a2) and torch.equal(kw["ids"], kw2["ids"])
    assert a.dtype == torch.float32 and kw["ids"].dtype == torch.int64
    assert int(kw["ids"].max()) < 7


def test_cli_entry_class_with_input_shape_agrees_with_the_api(
    models_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """fc: 2x8 @ 8x16 + bias (2*2*8*16 + 32 = 544 FLOPs), relu 32, mean 32, sum 16, amax 32."""
    report = _json(capsys, str(models_file), "--entry", "TinyNet", "--input-shape", "x=2,8")
    assert report["coverage"]["complete"]
    assert report["validation"]["status"] == "passed"
    assert [o["name"] for o in report["validation"]["outputs"]] == ["y0", "y1", "y2", "y3"]
    from zoo_entry_models import TinyNet  # type: ignore[import-not-found]

    _, kw = inputs_from_shapes((InputShape("x", (2, 8)),))
    torch.manual_seed(0)
    api = solar.analyze(TinyNet(), (), kw)
    assert api.flops == report["flops"]
    assert api.ir.kernels == report["ir"]["kernels"]
    assert api.validation.status == "passed"


def test_cli_entry_without_a_file_and_pt_dict_inputs(
    models_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pt = tmp_path / "in.pt"
    torch.save({"x": torch.randn(3, 8), "scale": torch.tensor(2.0)}, pt)
    report = _json(capsys, "--entry", "zoo_entry_models:TinyNet", "--inputs", str(pt))
    assert report["input"]["path"] == "<entry zoo_entry_models:TinyNet>"
    assert report["validation"]["status"] == "passed"
    assert report["coverage"]["complete"]


def test_cli_function_entry_with_npz_positional(
    models_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """matmul of 4x8 by 8x3: 2*4*8*3 = 192 FLOPs."""
    npz = tmp_path / "in.npz"
    np.savez(npz, np.ones((4, 8), np.float32), np.ones((8, 3), np.float32))
    report = _json(capsys, str(models_file), "--entry", "matmul", "--inputs", str(npz))
    assert report["flops"] == 192.0
    assert report["validation"]["status"] == "passed"


def test_cli_entry_class_without_inputs_says_how(
    models_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = run_cli(capsys, "analyze", str(models_file), "--entry", "TinyNet")
    assert res.code == 1
    assert "error[E0502]" in res.err and "--input-shape" in res.err


def test_cli_without_file_or_module_entry(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(capsys, "analyze", "--entry", "TinyNet")
    assert res.code == 2
    assert "error[E0915]" in res.err


def test_api_keyword_inputs_and_nested_outputs() -> None:
    class Net(torch.nn.Module):
        def forward(self, x, *, bias):
            return {"y": x * 2 + bias, "more": [x.sum(), (x.mean(),)]}

    report = solar.analyze(Net(), (torch.randn(3, 4),), {"bias": torch.randn(4)})
    assert report.validation.status == "passed"
    assert len(report.validation.outputs) == 3


def test_value_dependent_control_flow_is_resolved_on_the_values() -> None:
    """A branch on a tensor value: captured with real tensors, the branch taken is the IR."""

    def fn(x):
        return x * 2 if x.sum() > 0 else x - 1

    x = torch.ones(4, 4)
    report = solar.analyze(fn, (x,))
    assert report.validation.status == "passed"
    assert report.frontend.captured_with == "real tensors"
    assert any("control flow" in n for n in report.frontend.notes)
