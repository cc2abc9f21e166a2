"""The model file runs once per analysis (issue 17: Speed, "the model runs once").

The sample counts, in a file next to it, every execution of the module (``import``)
and every forward pass on real tensors (``run``; passes over meta or fake tensors are
captures, which allocate nothing). Note [One import per file] in
`solar.frontends.kit.loader`: the symbolic re-captures, the reference and the
reduced-size search rebind the constants of the one imported module.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from solar.pipeline import AnalyzeOptions, analyze

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

COUNTED = """
import torch
import torch.nn as nn

BATCH = 64
HIDDEN = 128
{extra}

def _tick(what):
    with open({log!r}, "a") as f:
        f.write(what + "\\n")


_tick("import")


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.fc = nn.Linear(hidden, hidden)

    def forward(self, x):
        if x.device.type != "meta" and not isinstance(x, torch._subclasses.FakeTensor):
            _tick("run")
        return torch.relu(self.fc(self.ln(x)))


def get_inputs():
    return [torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
"""


def _model(tmp_path: Path, extra: str = "") -> tuple[Path, Path]:
    log = tmp_path / "runs.log"
    path = tmp_path / "counted.py"
    path.write_text(COUNTED.format(log=str(log), extra=extra))
    return path, log


def _counts(log: Path) -> Counter[str]:
    return Counter(log.read_text().split()) if log.exists() else Counter()


def test_validation_off_imports_once_and_never_runs(tmp_path: Path) -> None:
    path, log = _model(tmp_path)
    report = analyze(path, AnalyzeOptions(validate="off"))
    assert report.symbolic_sizes  # the symbolic re-captures happened, on the same module
    assert _counts(log) == Counter({"import": 1})


def test_full_reference_imports_once_and_runs_once(tmp_path: Path) -> None:
    path, log = _model(tmp_path)
    report = analyze(path, AnalyzeOptions())
    assert report.validation.status == "passed"
    assert report.validation.strategy == "full"
    assert _counts(log) == Counter({"import": 1, "run": 1})


def test_reduced_size_search_imports_once_and_runs_once(tmp_path: Path) -> None:
    path, log = _model(tmp_path)
    # full size: 64x128 fp32 activations (32 KiB each) and 66 KiB of weights
    report = analyze(path, AnalyzeOptions(reference_budget_bytes=96 << 10))
    assert report.validation.status == "passed"
    assert report.validation.strategy == "reduced-sizes"
    assert _counts(log) == Counter({"import": 1, "run": 1})


def test_a_file_that_derives_sizes_at_import_is_imported_per_size(tmp_path: Path) -> None:
    # `WIDE` reads HIDDEN while the file executes: rebinding HIDDEN afterwards would
    # leave it stale, so every other size is a fresh import (and the report the same)
    (tmp_path / "plain").mkdir()
    (tmp_path / "derived").mkdir()
    plain_path, plain_log = _model(tmp_path / "plain")
    derived_path, derived_log = _model(tmp_path / "derived", extra="WIDE = 2 * HIDDEN")
    plain = analyze(plain_path, AnalyzeOptions(validate="off"))
    derived = analyze(derived_path, AnalyzeOptions(validate="off"))
    assert _counts(plain_log)["import"] == 1
    assert _counts(derived_log)["import"] > 1
    assert plain.archs == derived.archs
