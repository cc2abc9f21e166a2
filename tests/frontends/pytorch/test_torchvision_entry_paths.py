"""Models that import torchvision (directly or through transformers' lazy classes) work on
every entry path, as a user runs them: a model file, ``--entry pkg.mod:Class``, the Python
API. Each runs in a fresh interpreter that has imported nothing but what the user's
command imports, so nothing the test process did (the zoo, another test) prepares
torchvision for it. With PyPI's CUDA torchvision beside the CPU torch wheel (the
project's own environment) these are the paths `solar.torchvision_shim` must cover; with a
torchvision whose extension loads they pass unchanged.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch
pytest.importorskip("torch")
if importlib.util.find_spec("torchvision") is None:  # not imported here: see the docstring
    pytest.skip("torchvision is not installed", allow_module_level=True)
ROOT = Path(__file__).resolve().parents[3]

BERT_FILE = """
import torch
import transformers as T


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        cfg = T.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=64, vocab_size=64)
        self.bert = T.BertModel(cfg)  # resolved lazily: transformers imports torchvision now

    def forward(self, ids):
        return self.bert(ids).last_hidden_state


def get_inputs():
    return [torch.randint(0, 64, (1, 8))]
"""

RESNET_ENTRY = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        import torchvision

        self.body = torchvision.models.resnet18(num_classes=10)

    def forward(self, x):
        return self.body(x)
"""

API_SCRIPT = """
import solar
import torch
import transformers as T

cfg = T.BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                   intermediate_size=64, vocab_size=64)
model = T.BertModel(cfg)
report = solar.analyze(model, (torch.randint(0, 64, (1, 8)),), validate="off")
print(report.flops)
"""


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )


def _complete_with_flops(report: Path) -> bool:
    data = json.loads(report.read_text())
    return bool(data["coverage"]["complete"]) and data["flops"] > 0


def test_model_file_building_a_lazy_transformers_class_in_init(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    (tmp_path / "bert.py").write_text(BERT_FILE)
    done = _run(["-m", "solar", "analyze", "bert.py", "--validate", "off", "-o", "r.json"],
                tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _complete_with_flops(tmp_path / "r.json")


def test_entry_module_importing_torchvision_in_init(tmp_path: Path) -> None:
    (tmp_path / "nets.py").write_text(RESNET_ENTRY)
    done = _run(
        ["-m", "solar", "analyze", "--entry", "nets:Net", "--input-shape", "1,3,32,32",
         "--validate", "off", "-o", "r.json"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _complete_with_flops(tmp_path / "r.json")


def test_python_api_on_a_lazy_transformers_class(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    done = _run(["-c", API_SCRIPT], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout.strip().splitlines()[-1]) > 0


def test_import_solar_imports_no_torch() -> None:
    done = _run(["-c", "import sys, solar; print('torch' in sys.modules)"], ROOT)
    assert done.stdout.strip() == "False", done.stderr
