"""The per-module view of a JAX program (issue 31): Flax modules' name scopes become the
report's ``modules``, nested as the scopes are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

pytest.importorskip("jax")
pytest.importorskip("flax")
pytestmark = pytest.mark.jax

ROOT = Path(__file__).resolve().parents[2]


def test_flax_modules_are_report_modules(capsys: pytest.CaptureFixture[str], tmp_path: Path
                                         ) -> None:
    out = tmp_path / "report.json"
    r = run_cli(capsys, "analyze", str(ROOT / "samples" / "jax" / "flax_transformer_block.py"),
                "--arch", "H100_SXM", "--validate", "off", "--format", "json", "-o", str(out))
    assert r.code == 0, r.err
    report = json.loads(out.read_text())
    modules = {m["name"]: m for m in report["modules"]}
    attn = "MultiHeadDotProductAttention_0"
    assert {attn, f"{attn}.query", f"{attn}.key", f"{attn}.value", "Dense_0",
            "LayerNorm_0"} <= set(modules)
    kids = [m for name, m in modules.items() if name.startswith(attn + ".")]
    assert modules[attn]["flops"] > sum(m["flops"] for m in kids)  # its own attention too
    query = modules[f"{attn}.query"]
    assert query["bottleneck"]["H100_SXM"] == "compute" and query["kernels"] >= 1
    assert {"dot_general", "reduce_max"} <= {o["name"] for o in report["op_types"]}
    assert report["parameters"] > 0


def test_kernels_carry_their_source_line(capsys: pytest.CaptureFixture[str], tmp_path: Path
                                         ) -> None:
    # Note [JAX kernel sources]: the user's line, not Flax's or jax's own
    out = tmp_path / "report.json"
    sample = ROOT / "samples" / "jax" / "flax_mlp.py"
    r = run_cli(capsys, "analyze", str(sample), "--arch", "H100_SXM", "--validate", "off",
                "--format", "json", "-o", str(out))
    assert r.code == 0, r.err
    lines = sample.read_text().splitlines()
    kernels = {k["name"]: k for k in json.loads(out.read_text())["archs"][0]["kernels"]}
    for name, code in (("Dense_0_dot_general", "x = nn.gelu(nn.Dense(self.hidden)(x))"),
                       ("Dense_2_dot_general", "logits = nn.Dense(self.classes)(x)")):
        file, line = kernels[name]["source"].split(":")
        assert file == "flax_mlp.py" and lines[int(line) - 1].strip() == code
    assert kernels["Dense_0_dot_general"]["source"] != kernels["Dense_1_dot_general"]["source"]
