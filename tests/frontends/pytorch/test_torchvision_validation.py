"""Real torchvision models at batch 2 end in a report (issue 12, items 1 and 2).

Each model is built from torchvision's own constructor (random init, no weights) in a
model file whose inputs come from ``get_inputs()`` with literal sizes (no size
constants). `solar analyze` must exit 0 with a validation strategy in the report, and
SOLAR's FLOPs must not fall short of torch's FlopCounterMode on the ops it covers.
These run a real forward and the IR of a full network: tens of seconds each on two
cores, so they are marked slow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_cli

from solar.pipeline import AnalyzeOptions, analyze
from solar.report import Report

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

MODEL = """
import torch
import torchvision


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torchvision.models.{ctor}()
        head = {head}
        if head is not None:  # a zero-initialised head makes every output 0
            torch.nn.init.normal_(head.weight, std=0.02)

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(2, 3, 224, 224)]


def get_init_inputs():
    return []
"""

HEADS = {"resnet50": None, "vit_b_16": "self.net.heads.head", "swin_t": None,
         "convnext_tiny": None}


@pytest.fixture(scope="module", autouse=True)
def _torchvision() -> None:
    import solar  # noqa: F401  (a CUDA torchvision beside CPU torch: solar.torchvision_shim)

    pytest.importorskip("torchvision")


def _model_file(tmp_path: Path, ctor: str) -> Path:
    path = tmp_path / f"{ctor}.py"
    path.write_text(MODEL.format(ctor=ctor, head=HEADS[ctor]))
    return path


@pytest.mark.parametrize("ctor", ["resnet50", "vit_b_16", "swin_t", "convnext_tiny"])
def test_batch_2_exits_0_with_a_validation_strategy(
    ctor: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "analyze", str(_model_file(tmp_path, ctor)), "--format", "json", "-q")
    assert r.code == 0, r.err
    report = Report.model_validate_json(r.out)
    v = report.validation
    assert v.status == "passed", v
    assert v.strategy in ("full", "reduced-batch")
    assert all(o.max_abs_error is not None for o in v.outputs)
    ind = report.coverage.independent_flops
    assert ind is not None
    assert ind.total_flops > 1e9
    assert not ind.shortfall, ind
    assert report.flops >= (ind.covered_flops - ind.padding_flops) * 0.99


def test_resnet50_batch_cut_under_a_small_budget(tmp_path: Path) -> None:
    # 273 MiB at batch 2 (parameters 97.7 MiB): 200 MiB fits batch 1 only
    report = analyze(
        _model_file(tmp_path, "resnet50"), AnalyzeOptions(reference_budget_bytes=200 << 20)
    )
    v = report.validation
    assert v.status == "passed", v
    assert v.strategy == "reduced-batch"
    assert v.reason is not None and v.reason.startswith("cut the inputs' batch 2->1")
