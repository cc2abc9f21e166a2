"""The profiler views as a user sees them (issue 31): ``solar analyze`` on PyTorch
samples prints full kernel names with their FLOPs and bytes, tables by op type and by
module, the parameter count, the ops the FLOP check cannot see, and hints that name the
bound they give; the JSON report carries ``modules``, ``op_types`` and ``parameters``."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]
RESNET = ROOT / "samples" / "torch" / "resnet_block.py"
ENCODER = ROOT / "samples" / "torch" / "transformer_encoder.py"
ARGS = ("--arch", "H100_SXM", "--validate", "off")


def _json(capsys: pytest.CaptureFixture[str], tmp_path: Path, sample: Path, *extra: str
          ) -> dict:
    out = tmp_path / "report.json"
    r = run_cli(capsys, "analyze", str(sample), *ARGS, "--format", "json", "-o", str(out), *extra)
    assert r.code == 0, r.err
    return json.loads(out.read_text())


def _text(capsys: pytest.CaptureFixture[str], sample: Path, *extra: str) -> str:
    r = run_cli(capsys, "analyze", str(sample), *ARGS, *extra)
    assert r.code == 0, r.err
    return r.out


def _model(sample: Path) -> torch.nn.Module:
    spec = importlib.util.spec_from_file_location(sample.stem, sample)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Model(*mod.get_init_inputs())


def test_json_report_has_modules_op_types_and_parameters(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = _json(capsys, tmp_path, RESNET)
    assert report["schema_version"] == "1.7"
    modules = {m["name"]: m for m in report["modules"]}
    # every nn.Module that ran a kernel, with the parents of nested ones (fvcore's by_module)
    assert {"conv1", "bn1", "conv2", "bn2", "relu", "shortcut", "shortcut.0",
            "shortcut.1"} <= set(modules)
    parent, kids = modules["shortcut"], (modules["shortcut.0"], modules["shortcut.1"])
    assert parent["kernels"] == sum(k["kernels"] for k in kids)
    assert parent["flops"] == pytest.approx(sum(k["flops"] for k in kids))
    assert parent["time_s"]["H100_SXM"] == pytest.approx(sum(k["time_s"]["H100_SXM"] for k in kids))
    ops = {o["name"]: o for o in report["op_types"]}
    assert ops["conv2d"]["kernels"] == 3 and ops["conv2d"]["bottleneck"]["H100_SXM"] == "compute"
    kernels = report["archs"][0]["kernels"]
    assert sum(o["flops"] for o in report["op_types"]) == pytest.approx(
        sum(k["flops"] for k in kernels))
    model = _model(RESNET)
    weights = sum(p.numel() for p in model.parameters())
    everything = weights + sum(b.numel() for b in model.buffers())
    assert weights <= report["parameters"] <= everything
    assert report["parameter_bytes"] >= 4 * weights


def test_summary_prints_full_names_flops_bytes_and_tables(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = _text(capsys, RESNET, "--top", "20")
    report = _json(capsys, tmp_path, RESNET)
    kernels = report["archs"][0]["kernels"]
    longest = max(kernels, key=lambda k: len(k["name"]))
    assert len(longest["name"]) > 20
    assert re.search(rf"^    {longest['name']}\b", text, re.M), "kernel names are never cut"
    assert "..." not in text
    head = next(x for x in text.splitlines() if "FLOPs" in x and "roof" in x)
    assert "bytes" in head  # the next-steps table has FLOPs and bytes columns
    assert "7.05 GFLOP" in text  # conv2's FLOPs, as `format_flops` prints them
    assert "  by op type:" in text and "  by module:" in text
    assert re.search(r"^    shortcut\.0 +1 ", text, re.M)
    assert re.search(r"^parameters: \d+(\.\d+)? k elements, [\d.]+ kB \(parameters and buffers\)$",
                     text, re.M)


_OPAQUE = """
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(64, 192)
        self.proj = torch.nn.Linear(64, 64)

    def forward(self, x):
        out, _ = torch._native_multi_head_attention(
            x, x, x, 64, 4, self.qkv.weight, self.qkv.bias, self.proj.weight, self.proj.bias,
            need_weights=False)
        return out

def get_inputs():
    return [torch.randn(2, 128, 64)]

def get_init_inputs():
    return []
"""


def test_flop_check_names_the_ops_the_counter_cannot_see(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # a program calling torch's fused attention op itself: the counter has no formula
    # for it, and the check names it instead of a bare "(ok)"
    model = tmp_path / "opaque.py"
    model.write_text(_OPAQUE)
    text = _text(capsys, model)
    assert "(ok; the counter has no formula for _native_multi_head_attention)" in text
    report = _json(capsys, tmp_path, model)
    unseen = report["coverage"]["independent_flops"]["unseen_ops"]
    assert unseen[0] == "_native_multi_head_attention"


def test_eval_mode_transformer_layers_are_their_kernels(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Note [No fused fast path]: an eval-mode TransformerEncoderLayer is captured as the
    # kernels training mode runs, not one opaque fast-path op, and the counter sees them
    report = _json(capsys, tmp_path, ENCODER)
    train = _json(capsys, tmp_path, ENCODER, "--train-mode")
    names = [k["name"] for k in report["archs"][0]["kernels"]]
    assert names == [k["name"] for k in train["archs"][0]["kernels"]]
    assert {"post_self_attn_attention", "pre_linear1_addmm"} <= set(names)
    assert [b["time_s"] for b in report["archs"][0]["bounds"]] == \
        [b["time_s"] for b in train["archs"][0]["bounds"]]
    check = report["coverage"]["independent_flops"]
    assert check["total_flops"] >= 0.99 * check["solar_flops"]
    assert not any(op.startswith(("_transformer", "_native")) for op in check["unseen_ops"])


def test_precision_hint_promises_the_bound_bf16_gives(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    text = _text(capsys, RESNET)
    hint = re.search(r"--precision bf16 bounds: fused <= ([\d.]+) (\S+)", text)
    assert hint, text
    bf16 = _text(capsys, RESNET, "--precision", "bf16")
    fused = re.search(r"^  fused +([\d.]+) (\S+)", bf16, re.M)
    assert fused and fused.groups() == hint.groups()  # the hint promises what bf16 gives
    assert "--precision bf16 bounds" not in bf16  # no hint once followed
    # the what-if says what it assumed: the program cast to bf16, bytes included
    assert "  precision: the program cast to bf16: matmuls and convolutions at the bf16 tensor " \
        "peak,\n    fp32 tensors (inputs, parameters, activations, outputs) at 2 bytes; " \
        "integer and fp64 tensors keep their dtype" in bf16


_CAST = """
import torch
import torch.nn as nn

DTYPE = torch.{dtype}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(16, 16, 3, padding=1)
        self.norm = nn.GroupNorm(4, 16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.to(DTYPE)

    def forward(self, x):
        h = torch.nn.functional.silu(self.norm(self.conv1(x)))
        return x + self.conv2(h)


def get_inputs():
    return [torch.randn(8, 16, 128, 128, dtype=DTYPE)]


def get_init_inputs():
    return []
"""


def test_bf16_what_if_moves_the_bytes_of_the_model_really_cast(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Note [Precision what-if bytes]: a memory-bound conv block analysed with
    # --precision bf16 moves the bytes of the same block cast with .to(torch.bfloat16)
    # and run on bf16 inputs, in every bound model, and its bounds are that block's
    files = {}
    for dtype in ("float32", "bfloat16"):
        files[dtype] = tmp_path / f"block_{dtype}.py"
        files[dtype].write_text(_CAST.format(dtype=dtype))
    cold = ("--cache", "cold")
    what_if = _json(capsys, tmp_path, files["float32"], "--precision", "bf16", *cold)
    cast = _json(capsys, tmp_path, files["bfloat16"], *cold)
    fp32 = _json(capsys, tmp_path, files["float32"], *cold)
    rows = [{b["model"]: b for b in r["archs"][0]["bounds"]} for r in (what_if, cast, fp32)]
    for model in ("unfused", "fused", "cache-aware"):
        assert rows[0][model]["dram_bytes"] == rows[1][model]["dram_bytes"] > 0
        assert rows[0][model]["l2_bytes"] == rows[1][model]["l2_bytes"]
        assert rows[2][model]["dram_bytes"] == pytest.approx(2 * rows[0][model]["dram_bytes"],
                                                             rel=1e-3)
        assert rows[0][model]["time_s"] == pytest.approx(rows[1][model]["time_s"], rel=1e-6)
    assert rows[0]["fused"]["bottleneck"] == "memory"
    assert what_if["fused_dram_bytes"] == cast["fused_dram_bytes"]
    kernels = [(k["name"], k["bytes"]) for k in what_if["archs"][0]["kernels"]]
    assert kernels == [(k["name"], k["bytes"]) for k in cast["archs"][0]["kernels"]]
    # the hint on the fp32 block promises the bound the what-if gives
    assert fp32["archs"][0]["bf16_bounds_s"] == {
        m: b["time_s"] for m, b in rows[0].items()}
    assert what_if["archs"][0]["bf16_bounds_s"] is None


def test_kernels_carry_their_source_line(capsys: pytest.CaptureFixture[str], tmp_path: Path
                                         ) -> None:
    # Note [Kernel sources]: each kernel names the line of the model that made it, in the
    # JSON and in the next-steps table
    report = _json(capsys, tmp_path, RESNET)
    lines = RESNET.read_text().splitlines()
    kernels = {k["name"]: k["source"] for k in report["archs"][0]["kernels"]}
    for name, code in (("conv1_conv2d", "out = self.relu(self.bn1(self.conv1(x)))"),
                       ("conv2_conv2d", "out = self.bn2(self.conv2(out))"),
                       ("add", "return self.relu(out + self.shortcut(x))")):
        file, line = kernels[name].split(":")
        assert file == "resnet_block.py" and lines[int(line) - 1].strip() == code
    text = _text(capsys, RESNET)
    # rows this wide take two lines: the full name and its source, then the numbers
    head = r"^    kernel  \(source\)\n +bound +share +FLOPs +bytes +AI F/B +roof +next step$"
    assert re.search(head, text, re.M)
    assert re.search(rf"^    conv2_conv2d  \({kernels['conv2_conv2d']}\)\n .* tensor:", text, re.M)
    table = text[text.index("  next steps:"):text.index("  by op type:")]
    assert max(len(line) for line in table.splitlines()) <= 100
