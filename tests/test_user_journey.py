"""The first hour of a new user (issue 16): sizes, measurement, samples, next steps, devices.

Each test follows a command a new user runs and asserts real numbers: hand-computed
FLOPs, exact agreement between re-bound and re-captured costs, which device a
measurement belongs to, what the summary and the cross-device tables say.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from sample_sizes import SMALL_SIZES, set_args

from solar.diagnostics import UsageError
from solar.hw import device_matches_spec, dump_hardware_spec, load_hardware_spec
from solar.pipeline import AnalyzeOptions, costs_at, lift_source
from solar.report import Report
from solar.symbolic import evaluate_formula

GPT = SAMPLES / "torch" / "gpt_block.py"

ENTRY_FILE = """\
import torch

SEQ = 16
D = 8
HIDDEN = 4 * D


def f(x, w):
    return torch.relu(x @ w)


def get_inputs():
    return [torch.randn(SEQ, D), torch.randn(D, HIDDEN)]
"""


# ---------------------------------------------------------------------------- 1. --set
@pytest.mark.torch
def test_unknown_size_is_an_error_listing_the_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    r = run_cli(capsys, "analyze", str(GPT), "--set", "SEQ_LEN=4096", "-q")
    assert r.code == 2
    assert "error[E0913]: --set SEQ_LEN: gpt_block.py has no size constant" in r.err
    assert "BATCH=8, D_MODEL=1024, HEADS=16, SEQ=2048" in r.err


@pytest.mark.jax
def test_unknown_size_is_an_error_for_jax_too(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("flax")
    r = run_cli(capsys, "analyze", str(SAMPLES / "jax" / "flax_mlp.py"), "--set", "WIDTH=3")
    assert r.code == 2
    assert "error[E0913]" in r.err and "HIDDEN=4096" in r.err


@pytest.mark.torch
def test_set_rebinds_an_entry_file_and_its_derived_constants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "mm_entry.py"
    src.write_text(ENTRY_FILE)
    r = run_cli(capsys, "analyze", str(src), "--entry", "f", "--set", "SEQ=64", "--set",
                "D=32", "--format", "json", "-q")
    assert r.code == 0, r.err
    report = Report.model_validate_json(r.out)
    # HIDDEN = 4 * D is recomputed from the rebound D (the assignment is rewritten)
    assert report.sizes == {"D": 32, "HIDDEN": 128, "SEQ": 64}
    # x @ w: 2*64*32*128 FLOPs, relu: 64*128
    assert report.flops == 2 * 64 * 32 * 128 + 64 * 128
    assert report.symbolic_sizes == ("SEQ", "D")
    assert evaluate_formula(report.flops_formula, {"SEQ": 100, "D": 7}) == (
        2 * 100 * 7 * 28 + 100 * 28
    )
    assert any("HIDDEN: computed in the file" in n for n in report.frontend.notes)


@pytest.mark.torch
def test_traced_program_is_symbolic_and_tells_coincident_sizes_apart() -> None:
    pytest.importorskip("torch")
    small = SMALL_SIZES["gpt_block"]  # SEQ = 8 = D_MODEL // HEADS: one value, two sizes
    prepared = lift_source(GPT, AnalyzeOptions(sizes=small, validate="off"))
    decls = {d.name for d in prepared.program.sizes}
    assert {"BATCH", "SEQ", "D_MODEL", "HEADS", "D_MODEL_per_HEADS"} <= decls
    attn = next(t for t in prepared.program.tensors if "attention_for_cpu" in t.name)
    shape = [getattr(d, "name", None) for d in attn.shape]
    assert shape == ["BATCH", "HEADS", "SEQ", "D_MODEL_per_HEADS"]


@pytest.mark.torch
def test_costs_at_a_new_binding_equal_a_fresh_capture() -> None:
    pytest.importorskip("torch")
    small = SMALL_SIZES["gpt_block"]
    prepared = lift_source(GPT, AnalyzeOptions(sizes=small, validate="off"))
    spec = load_hardware_spec("H100_SXM")
    new = {"BATCH": 4, "SEQ": 96, "D_MODEL": 64, "HEADS": 2}
    rebound = costs_at(prepared, new, [spec])
    fresh = lift_source(GPT, AnalyzeOptions(sizes=new, validate="off"))
    again = costs_at(fresh, {}, [spec])
    assert rebound.flops == again.flops > 0
    assert rebound.fused_dram_bytes == again.fused_dram_bytes
    for a, b in zip(rebound.archs[0].bounds, again.archs[0].bounds, strict=True):
        assert a.model == b.model and a.time_s == pytest.approx(b.time_s, rel=1e-12)
    # hand count of the four linear layers alone: 2*B*T*d*(3d + d + 4d + 4d)
    assert rebound.flops > 2 * 4 * 96 * 64 * 64 * 12


@pytest.mark.torch
def test_costs_at_refuses_unknown_and_constant_sizes() -> None:
    pytest.importorskip("torch")
    prepared = lift_source(GPT, AnalyzeOptions(sizes=SMALL_SIZES["gpt_block"], validate="off"))
    with pytest.raises(UsageError) as err:
        costs_at(prepared, {"NOPE": 3})
    assert err.value.code == "E0913"


@pytest.mark.torch
def test_a_size_that_changes_the_structure_stays_constant_and_says_so(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "branchy.py"
    src.write_text(
        "import torch\nimport torch.nn as nn\nN = 16\nLAYERS = 2\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        for _ in range(LAYERS):\n            x = x * 2.0\n        return x\n"
        "def get_inputs():\n    return [torch.randn(N, N)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    prepared = lift_source(src, AnalyzeOptions(validate="off"))
    assert set(prepared.front.source_sizes) == {"N", "LAYERS"}
    assert [d.name for d in prepared.program.sizes] == ["N"]
    assert any("LAYERS stays constant" in n for n in prepared.notes)
    with pytest.raises(UsageError) as err:
        costs_at(prepared, {"LAYERS": 3})
    assert err.value.code == "E0914"
    # N is symbolic: 2 multiplies over N*N elements
    assert costs_at(prepared, {"N": 100}).flops == 2 * 100 * 100


# ---------------------------------------------------------------------------- 2. --measure
@pytest.mark.parametrize(
    ("device", "spec", "matches"),
    [
        ("NVIDIA H100 80GB HBM3", "H100_SXM", True),
        ("NVIDIA H100 80GB HBM3", "H100_PCIe", False),
        ("NVIDIA H100 PCIe", "H100_PCIe", True),
        ("NVIDIA H100 PCIe", "H100_SXM", False),
        ("NVIDIA A100-SXM4-80GB", "A100_SXM_80GB", True),
        ("NVIDIA A100 80GB PCIe", "A100_PCIe_80GB", True),
        ("NVIDIA H200", "H200", True),
        ("NVIDIA H200", "H100_SXM", False),
        ("NVIDIA GeForce RTX 4090", "RTX_4090", True),
        ("TPU v5p", "TPU_v5p", True),
        ("cpu", "H100_SXM", False),
    ],
)
def test_measured_device_matches_only_its_own_spec(device: str, spec: str, matches: bool) -> None:
    assert device_matches_spec(device, load_hardware_spec(spec)) is matches


@pytest.mark.torch
def test_cpu_measurement_gives_no_h100_headroom_and_the_gate_does_not_fail_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "r.json"
    r = run_cli(capsys, "analyze", str(SAMPLES / "torch" / "matmul.py"), "--measure",
                "--arch", "H100_SXM", "-o", str(out), "-q")
    assert r.code == 0, r.err
    assert "headroom: not computed" in r.out and "headroom vs" not in r.out
    report = Report.model_validate_json(out.read_text())
    m = report.measurement
    assert m is not None and m.device == "cpu" and m.arch is None
    assert all(k.measured_s is None for k in report.archs[0].kernels)
    g = run_cli(capsys, "gate", str(out), "--max-headroom", "3")
    assert g.code == 0, g.out + g.err
    assert "skipped" in g.out + g.err


@pytest.mark.torch
def test_measurement_on_a_calibrated_spec_of_this_host_has_per_kernel_gaps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    host = socket.gethostname()
    spec = load_hardware_spec("H100_SXM").model_copy(
        update={"name": "box", "display_name": f"x86_64 on {host} (measured)",
                "measured": True, "kind": "cpu"}
    )
    spec_file = tmp_path / "box.yaml"
    spec_file.write_text(dump_hardware_spec(spec))
    src = SAMPLES / "torch" / "gpt_block.py"
    r = run_cli(capsys, "analyze", str(src), *set_args("gpt_block"), "--measure", "--arch",
                str(spec_file), "--format", "json", "-q")
    assert r.code == 0, r.err
    report = Report.model_validate_json(r.out)
    m = report.measurement
    assert m is not None and m.arch == "box"
    assert [h.model for h in report.archs[0].headroom] == ["unfused", "fused", "cache-aware"]
    # every IR kernel of the block is matched to a profiled ATen op, in order
    matched = [t.kernel for t in m.kernels if t.kernel is not None]
    assert matched == [k.name for k in report.archs[0].kernels]
    assert all(k.measured_s is not None and k.measured_s > 0 for k in report.archs[0].kernels)
    text = run_cli(capsys, "analyze", str(src), *set_args("gpt_block"), "--measure", "--arch",
                   str(spec_file), "--validate", "off", "-q", "--top", "3").out
    assert "kernels by gap to SOL (measured - bound" in text


# ---------------------------------------------------------------------------- 3. samples
@pytest.mark.torch
def test_first_tour_command_prints_no_nanoseconds(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    r = run_cli(capsys, "analyze", str(GPT), "--arch", "H100_SXM", "--validate", "off", "-q")
    assert r.code == 0, r.err
    assert " ns" not in r.out
    assert "sizes: BATCH=8, D_MODEL=1024, HEADS=16, SEQ=2048" in r.out
    report_line = next(line for line in r.out.splitlines() if line.startswith("  fused "))
    assert "ms" in report_line
    assert "below one kernel launch" not in r.out


@pytest.mark.torch
def test_toy_sizes_get_a_launch_latency_note(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    r = run_cli(capsys, "analyze", str(GPT), *set_args("gpt_block"), "--validate", "off", "-q")
    assert "is below one kernel launch" in r.out


# ---------------------------------------------------------------------------- 4. next steps
@pytest.mark.torch
def test_summary_ranks_kernels_says_the_roof_and_suggests_bf16(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    r = run_cli(capsys, "analyze", str(GPT), "--validate", "off", "-q", "--top", "2")
    lines = r.out.splitlines()
    head = next(i for i, line in enumerate(lines) if "next steps: 2 of 10 kernels" in line)
    # rows with a source line take two lines: the name and its source, then the numbers
    names, rows = lines[head + 3 : head + 7 : 2], lines[head + 4 : head + 7 : 2]
    # fc and out move 2*B*T*d*4d FLOPs each: the two largest kernels, at the TF32 roof
    assert names[0].split()[0] in ("fc_addmm", "out_addmm")
    assert names[1].split()[0] in ("fc_addmm", "out_addmm")
    # fp32-accurate on H100: 3 TF32 passes (Note [Emulated fp32])
    assert all("tensor:3xtf32" in row and "--precision bf16" in row for row in rows)
    assert lines[head + 7].startswith("    bytes: ")  # --top 2: two rows, then the legend
    assert ("hint: cast to bf16: fp32/TF32 matmuls and convolutions (93% of the unfused "
            "bound)") in r.out
    assert "--precision bf16 bounds: fused <= " in r.out  # the bound the hint gives


@pytest.mark.torch
def test_kernel_names_agree_between_cli_and_python_api(
    capsys: pytest.CaptureFixture[str],
) -> None:
    torch = pytest.importorskip("torch")
    import importlib.util

    from solar.pipeline import analyze_module

    small = SMALL_SIZES["gpt_block"]
    r = run_cli(capsys, "analyze", str(GPT), *set_args("gpt_block"), "--validate", "off",
                "--format", "json", "-q")
    cli_names = [k["name"] for k in json.loads(r.out)["archs"][0]["kernels"]]
    spec = importlib.util.spec_from_file_location("gpt_block_api", GPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model = mod.Model(small["D_MODEL"], small["HEADS"])
    x = torch.randn(small["BATCH"], small["SEQ"], small["D_MODEL"])
    report = analyze_module(model, (x,), AnalyzeOptions(validate="off"))
    assert [k.name for k in report.archs[0].kernels] == cli_names


@pytest.mark.torch
def test_kernel_names_agree_between_cli_and_an_entry_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "gpt_entry.py"
    src.write_text(
        "import importlib.util\nimport torch\n"
        f"spec = importlib.util.spec_from_file_location('g', {str(GPT)!r})\n"
        "g = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(g)\n"
        "model = g.Model(32, 4).eval()\n"
        "def run(x):\n    return model(x)\n"
        "def get_inputs():\n    return [torch.randn(2, 8, 32)]\n"
    )
    r = run_cli(capsys, "analyze", str(GPT), *set_args("gpt_block"), "--validate", "off",
                "--format", "json", "-q")
    cli_names = [k["name"] for k in json.loads(r.out)["archs"][0]["kernels"]]
    e = run_cli(capsys, "analyze", str(src), "--entry", "run", "--validate", "off",
                "--format", "json", "-q")
    assert e.code == 0, e.err
    assert [k["name"] for k in json.loads(e.out)["archs"][0]["kernels"]] == cli_names
    assert cli_names[:3] == ["ln1_layer_norm", "qkv_addmm", "attention"]


@pytest.mark.torch
def test_ir_kernel_count_agrees_with_the_kernel_table_or_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "dead.py"
    src.write_text(
        "import torch\nimport torch.nn as nn\nN = 64\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n        unused = torch.exp(x)\n        return x * 2.0\n"
        "def get_inputs():\n    return [torch.randn(N, N)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    r = run_cli(capsys, "analyze", str(src), "-q")
    assert "IR: 2 kernels, 6 statements (1 bounded; 1 compute values no output needs)" in r.out
    assert "next steps: 1 of 1 kernels" in r.out


# ---------------------------------------------------------------------------- 5. devices
@pytest.mark.torch
def test_compare_marks_a_tpu_row_charged_at_the_bf16_peak(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    mm = str(SAMPLES / "torch" / "matmul.py")  # fp32 16x24 @ 24x8: 2*16*8*24 = 6144 FLOPs
    r = run_cli(capsys, "compare", mm, "--arch", "TPU_v5p", "--arch", "H100_SXM", "--format",
                "json")
    assert r.code == 0, r.err
    rows = {(x["device"], x["model"]): x for x in json.loads(r.out)["rows"]}
    tpu, h100 = rows[("TPU_v5p", "fused")], rows[("H100_SXM", "fused")]
    assert tpu["flops_by_pipe"] == {"tensor:bf16": 6144.0} and tpu["reduced_precision"]
    assert h100["flops_by_pipe"] == {"tensor:3xtf32": 6144.0}
    assert not h100["reduced_precision"]
    text = run_cli(capsys, "compare", mm, "--arch", "TPU_v5p", "--arch", "H100_SXM").out
    assert "tensor:bf16*" in text and "* fp32 work charged at a reduced-precision peak" in text


@pytest.mark.torch
def test_provision_rows_state_their_precision_and_have_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    mm = str(SAMPLES / "torch" / "matmul.py")
    r = run_cli(capsys, "provision", mm, "--target-ms", "0.001", "--arch", "TPU_v5p",
                "--arch", "H100_SXM", "--format", "json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["precision_policy"] == "default"
    devices = {d["device"]: d for d in data["devices"]}
    assert devices["TPU_v5p"]["reduced_precision"] is True
    assert devices["H100_SXM"]["flops_by_pipe"] == {"tensor:3xtf32": 6144.0}
    text = run_cli(capsys, "provision", mm, "--target-ms", "0.001", "--arch", "TPU_v5p").out
    assert "(precision policy default)" in text and "tensor:bf16*" in text


def test_a_slow_program_is_timed_with_fewer_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import solar.measure as measure

    calls: list[int] = []
    monkeypatch.setattr(measure, "SLOW_RUN_S", 0.0)  # every run counts as slow
    timing = measure.time_callable(lambda: calls.append(1), warmup=3, trials=10)
    assert timing.trials == measure.SLOW_TRIALS == 3
    assert len(calls) == 1 + 3  # one warm-up, three trials
