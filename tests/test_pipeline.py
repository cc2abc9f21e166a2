"""End-to-end `solar analyze` per frontend: torch, jax, llm (offline cache), ir, Python API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from sample_sizes import set_args

from solar.pipeline import AnalyzeOptions, analyze
from solar.report import Report


@pytest.mark.torch
def test_torch_sample_end_to_end(capsys: pytest.CaptureFixture[str], golden: object) -> None:
    pytest.importorskip("torch")
    r = run_cli(capsys, "analyze", str(SAMPLES / "torch" / "gpt_block.py"), "--arch", "H100_SXM",
                *set_args("gpt_block"), "--format", "json", "-q")
    assert r.code == 0, r.err
    report = Report.model_validate_json(r.out)
    assert report.frontend.name == "torch"
    assert report.frontend.captured_with == "fake-tensor dispatch"
    assert report.coverage.complete
    assert report.validation.status == "passed"
    assert report.validation.strategy == "full"
    assert all(o.passed for o in report.validation.outputs)
    models = [b.model for b in report.archs[0].bounds]
    assert models == ["unfused", "fused", "cache-aware"]
    times = {b.model: b.time_s for b in report.archs[0].bounds}
    assert times["fused"] <= times["unfused"] and times["fused"] <= times["cache-aware"]


@pytest.mark.torch
def test_torch_large_sizes_validate_at_reduced_sizes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    args = ("analyze", str(SAMPLES / "torch" / "gpt_block.py"), "--set", "BATCH=16",
            "--set", "SEQ=4096", "--set", "D_MODEL=2048", "--set", "HEADS=16",
            "--format", "json", "-q")
    # D_MODEL is a width like any other (`model` names a size): halved with SEQ, the
    # check fits the default 1 GiB of validation memory
    r = run_cli(capsys, *args)
    assert r.code == 0, r.err
    report = Report.model_validate_json(r.out)
    assert report.validation.status == "passed"
    assert report.validation.strategy == "reduced-sizes"
    assert report.validation.sizes["D_MODEL"] < 2048  # what was checked, in the report
    assert report.validation.sizes["HEADS"] == 16
    # the bounds are for the full size: 4 linear layers of a 2048-wide block at 16x4096 tokens
    assert report.flops > 2 * 16 * 4096 * 2048 * 2048 * 12


@pytest.mark.torch
def test_a_program_over_the_validation_memory_is_checked_within_memavailable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A 320 MiB weight no size constant shrinks: nothing fits the default 1 GiB of
    validation memory, so the check is planned again within MemAvailable and the report
    says so; an explicit SOLAR_VALIDATION_MEMORY keeps the cap (Note [Validation memory])."""
    pytest.importorskip("torch")
    from solar.budget import memory_budget_bytes

    if memory_budget_bytes(capped=False) < 3 * 2**30:
        pytest.skip("needs about 6 GiB of available memory")
    src = tmp_path / "wide.py"
    src.write_text(
        "import torch\nimport torch.nn as nn\n"
        "class Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4096, 20480)\n"
        "    def forward(self, x):\n        return self.fc(x)\n"
        "def get_inputs():\n    return [torch.randn(2, 4096)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    r = run_cli(capsys, "analyze", str(src), "--format", "json", "-q")
    assert r.code == 0, r.err
    v = Report.model_validate_json(r.out).validation
    assert v.status == "passed", v.reason
    assert v.reason is not None and "checked within MemAvailable" in v.reason
    monkeypatch.setenv("SOLAR_VALIDATION_MEMORY", "1024")
    r = run_cli(capsys, "analyze", str(src), "--format", "json", "-q")
    assert r.code == 0, r.err
    v = Report.model_validate_json(r.out).validation
    assert v.status == "skipped"
    assert v.reason is not None and "SOLAR_VALIDATION_MEMORY" in v.reason


@pytest.mark.torch
def test_tf32_enabled_by_the_program_switches_policy(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    src = tmp_path / "tf32_mm.py"
    src.write_text(
        "import torch\nimport torch.nn as nn\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "class Model(nn.Module):\n    def forward(self, a, b):\n        return a @ b\n"
        "def get_inputs():\n    return [torch.randn(64, 32), torch.randn(32, 16)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    try:
        report = analyze(src, AnalyzeOptions())
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    assert report.archs[0].precision_policy == "tf32"
    assert any("TF32" in n for n in report.frontend.notes)


@pytest.mark.jax
@pytest.mark.parametrize(("setting", "policy"), [("", "tf32"), ("highest", "default")])
def test_jax_default_matmul_precision_sets_policy(
    tmp_path: Path, setting: str, policy: str
) -> None:
    """JAX fp32 dots run TF32 at DEFAULT precision: bounding them fp32-accurate is unsound."""
    jax = pytest.importorskip("jax")
    src = tmp_path / "mm.py"
    flag = f"jax.config.update('jax_default_matmul_precision', '{setting}')\n" if setting else ""
    src.write_text(
        "import jax\nimport jax.numpy as jnp\n" + flag
        + "def f(a, b):\n    return a @ b\n"
        "def get_inputs():\n    return [jnp.ones((64, 32)), jnp.ones((32, 16))]\n"
    )
    try:
        report = analyze(src, AnalyzeOptions(frontend="jax", validate="off"))
    finally:
        jax.config.update("jax_default_matmul_precision", None)
    assert report.archs[0].precision_policy == policy
    assert any("DEFAULT precision" in n for n in report.frontend.notes) == (policy == "tf32")


@pytest.mark.torch
def test_python_api(capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    import solar

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    report = solar.analyze(model, (torch.randn(8, 16),), arch=["H100_SXM", "B200"])
    assert [a.arch for a in report.archs] == ["H100_SXM", "B200"]
    assert report.validation.status == "passed"
    # 2 * 8 * (16*32 + 32*4) multiply-adds, plus bias adds and the ReLU compares
    assert report.flops >= 2 * 8 * (16 * 32 + 32 * 4)


@pytest.mark.torch
def test_model_file_that_raises_is_a_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "boom.py"
    src.write_text("import torch\nraise RuntimeError('kaboom')\n")
    r = run_cli(capsys, "analyze", str(src))
    assert r.code == 1
    assert "error[E0501]" in r.err and "kaboom" in r.err
    assert "Traceback" not in r.err
    missing = tmp_path / "empty.py"
    missing.write_text("x = 1\n")
    r = run_cli(capsys, "analyze", str(missing))
    assert r.code == 1 and "error[E050" in r.err


@pytest.mark.jax
def test_jax_sample_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("jax")
    r = run_cli(capsys, "analyze", str(SAMPLES / "jax" / "mpc_rollout.py"), "--format", "json",
                "-q")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["frontend"]["name"] == "jax"
    assert data["coverage"]["complete"]
    assert data["validation"]["status"] == "passed"
    assert any("XLA cost_analysis" in n for n in data["frontend"]["notes"])


@pytest.mark.torch
def test_llm_sample_offline_from_recorded_cache(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    r = run_cli(capsys, "analyze", str(SAMPLES / "llm" / "blocked_rmsnorm.py"), "--frontend",
                "llm", "--model", "recorded", "--llm-cache-dir", str(SAMPLES / "llm" / "cache"),
                "--format", "json", "-q")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["frontend"]["captured_with"] == "llm (cache hit)"
    assert data["validation"]["status"] == "passed"
    assert any(n.startswith("attempt 1:") for n in data["frontend"]["notes"])


def test_ir_file_with_reference_validates(tmp_path: Path) -> None:
    import numpy as np

    from solar.ir import parse_program, resolve_sizes
    from solar.validate import random_inputs

    path = SAMPLES / "ir" / "matmul.alir"
    program = parse_program(path.read_text())
    inputs = random_inputs(program, resolve_sizes(program), np.random.default_rng(1))
    ref = tmp_path / "ref.npz"
    np.savez(ref, **inputs, C=inputs["A"].astype(np.float64) @ inputs["B"])
    report = analyze(path, AnalyzeOptions(reference_file=ref))
    assert report.validation.status == "passed"
    assert report.validation.outputs[0].name == "C"


@pytest.mark.torch
def test_measure_records_a_local_timing_but_no_headroom_on_another_device(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    r = run_cli(capsys, "analyze", str(SAMPLES / "torch" / "matmul.py"), "--measure",
                "--arch", "H100_SXM", "--format", "json", "-q")
    assert r.code == 0, r.err
    report = Report.model_validate_json(r.out)
    m = report.measurement
    assert m is not None and m.source == "measured" and m.trials >= 1
    assert m.min_ms is not None and m.max_ms is not None
    assert m.min_ms <= m.median_ms <= m.max_ms
    # this machine is no H100 SXM: the time is recorded, the ratio is not computed
    assert m.arch is None and report.archs[0].headroom == ()
    assert m.headroom_note is not None and "H100" in m.headroom_note


def test_calibrate_writes_a_measured_spec_usable_as_arch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec_file = tmp_path / "box.yaml"
    r = run_cli(capsys, "calibrate", "-o", str(spec_file), "--quick", "--name", "testbox")
    assert r.code == 0, r.err
    from solar.hw import load_hardware_spec

    spec = load_hardware_spec(str(spec_file))
    assert spec.measured and spec.name == "testbox" and spec.kind == "cpu"
    assert spec.dram_bandwidth_bytes_per_s > 1e9
    r = run_cli(capsys, "analyze", str(SAMPLES / "ir" / "matmul.alir"), "--arch", str(spec_file),
                "--format", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["archs"][0]["spec_measured"] is True


@pytest.mark.torch
def test_bounds_and_analyze_agree_on_the_programs_precision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    src = tmp_path / "tf32_linear.py"
    src.write_text(
        "import torch\nimport torch.nn as nn\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "class Model(nn.Module):\n    def forward(self, a, b):\n        return a @ b\n"
        "def get_inputs():\n    return [torch.randn(64, 32), torch.randn(32, 16)]\n"
        "def get_init_inputs():\n    return []\n"
    )
    try:
        analyzed = run_cli(capsys, "analyze", str(src), "--format", "json", "-q")
        bounded = run_cli(capsys, "bounds", str(src), "--json")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    assert analyzed.code == 0 and bounded.code == 0, analyzed.err + bounded.err
    report = json.loads(analyzed.out)["archs"][0]
    rows = json.loads(bounded.out)["archs"][0]
    assert report["precision_policy"] == rows["precision_policy"] == "tf32"
    assert report["bounds"] == rows["bounds"]


@pytest.mark.torch
def test_measure_reuses_the_reference_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    runs = tmp_path / "runs.txt"
    src = tmp_path / "counted.py"
    src.write_text(
        f"import torch\nopen({str(runs)!r}, 'a').write('.')\n"
        "class Model(torch.nn.Module):\n    def forward(self, a, b):\n        return a @ b\n"
        "def get_inputs():\n    return [torch.randn(16, 8), torch.randn(8, 4)]\n"
    )
    plain = run_cli(capsys, "analyze", str(src), "--format", "json", "-q")
    imports_plain = len(runs.read_text())
    assert imports_plain == 1  # Note [One import per file]
    runs.write_text("")
    # an edited file is a new file: this process's import of the old one is not reused
    src.write_text(src.read_text() + "# edited\n")
    timed = run_cli(capsys, "analyze", str(src), "--measure", "--format", "json", "-q")
    assert plain.code == 0 and timed.code == 0, plain.err + timed.err
    assert json.loads(timed.out)["validation"]["status"] == "passed"
    assert len(runs.read_text()) == imports_plain  # --measure runs the reference's build
