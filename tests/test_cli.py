"""End-to-end CLI tests: exit codes, streams, golden reports, schema, gate, batch, plot."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import ROOT, SAMPLES, ir_samples
from sample_sizes import small_ir_path, small_ir_text

from solar.report import Report, report_json_schema

MATMUL = str(small_ir_path("matmul"))  # the sample at its small test sizes


def _masked(report_json: str) -> str:
    """Mask the fields that legitimately vary between runs (timing, version, paths)."""
    data = json.loads(report_json)
    data["tool"]["version"] = "<version>"
    data["input"]["path"] = Path(data["input"]["path"]).name
    data["validation"]["wall_time_s"] = 0.0
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def test_ir_check_accepts_every_sample(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "ir", "check", *map(str, ir_samples()))
    assert r.code == 0, r.err
    assert f"{len(ir_samples())} file(s) ok" in r.err


def test_ir_check_reports_a_diagnostic_with_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.alir"
    bad.write_text(
        "solar-ir 1\nprogram p\ninput A : f32[4]\noutput C : f32[4]\n"
        "kernel k {\n  for i in 0 .. 4 {\n    C[i] = A[k]\n  }\n}\n"
    )
    r = run_cli(capsys, "ir", "check", str(bad))
    assert r.code == 1
    assert r.out == ""
    assert re.search(r"error\[E0204\]: .*`k`", r.err)
    assert f"--> {bad}:7:14" in r.err
    assert "    C[i] = A[k]" in r.err
    assert "Traceback" not in r.err


def test_ir_fmt_prints_canonical_text(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "ir", "fmt", MATMUL)
    assert r.code == 0
    assert r.out == Path(MATMUL).read_text().split("\n", 0)[0] or r.out.startswith("solar-ir 1")
    again = run_cli(capsys, "ir", "fmt", MATMUL)
    assert again.out == r.out


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["analyze", MATMUL, "--arch", "H999"], 2, "error[E0401]"),
        (["analyze", MATMUL, "--set", "M"], 2, "error[E0903]"),
        (["analyze", MATMUL, "--set", "Q=3"], 1, "error[E0220]"),
        (["analyze", "does/not/exist.py"], 2, "error[E0901]"),
        (["analyze", MATMUL, "--frontend", "cobol"], 2, "error[E0904]"),
        (["ir", "fmt", "nope.alir"], 2, "error[E0901]"),
        (["gate", "nope.json"], 1, "error[E0701]"),
        (["no-such-command"], 2, "error[E0904]: no such command"),
    ],
)
def test_error_exit_codes(
    capsys: pytest.CaptureFixture[str], args: list[str], code: int, needle: str
) -> None:
    r = run_cli(capsys, *args)
    assert r.code == code, (r.out, r.err)
    assert needle in r.err
    assert "Traceback" not in r.err


def test_analyze_ir_golden_report(capsys: pytest.CaptureFixture[str], golden: object) -> None:
    r = run_cli(
        capsys, "analyze", MATMUL, "--arch", "H100_SXM", "--arch", "MI300X",
        "--set", "M=4096", "--set", "N=4096", "--set", "K=4096", "--format", "json",
    )
    assert r.code == 0, r.err
    golden.check("cli/matmul_report.json", _masked(r.out))  # type: ignore[attr-defined]
    report = Report.model_validate_json(r.out)
    h100 = report.archs[0]
    fused = next(b for b in h100.bounds if b.model == "fused")
    # 2*4096^3 FLOPs, fp32-accurate: 3xTF32 on tensor cores (494.7 / 3 TFLOP/s): compute-bound.
    assert fused.time_s == pytest.approx(2 * 4096**3 / (494.7e12 / 3), rel=1e-6)
    assert fused.bottleneck == "compute"


def test_reports_are_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["analyze", str(SAMPLES / "ir" / "conv2d.alir"), "--format", "json"]
    assert run_cli(capsys, *args).out == run_cli(capsys, *args).out


def test_schema_matches_committed_copy(capsys: pytest.CaptureFixture[str]) -> None:
    committed = (ROOT / "docs" / "report.schema.json").read_text()
    assert report_json_schema() == committed, "run `solar schema > docs/report.schema.json`"
    assert run_cli(capsys, "schema").out == committed


def test_report_validates_against_the_json_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    r = run_cli(capsys, "analyze", MATMUL, "--format", "json", "--measured-ms", "1.0")
    jsonschema.validate(json.loads(r.out), json.loads(report_json_schema()))


def _report(tmp_path: Path, capsys: pytest.CaptureFixture[str], measured_ms: float) -> Path:
    out = tmp_path / f"r{measured_ms}.json"
    r = run_cli(
        capsys, "analyze", MATMUL, "--arch", "H100_SXM", "--set", "M=4096", "--set", "N=4096",
        "--set", "K=4096", "--measured-ms", str(measured_ms), "--output", str(out), "-q",
    )
    assert r.code == 0, r.err
    return out


def test_gate_passes_and_fails_on_headroom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # fused bound = 2*4096^3/(494.7e12/3) s = 0.8335 ms (3xTF32): headroom 1.6 / 0.8335 = 1.92
    report = _report(tmp_path, capsys, measured_ms=1.6)
    summary, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    ok = run_cli(capsys, "gate", str(report), "--max-headroom", "2.5", "--summary", str(summary),
                 "--junit", str(junit))
    assert ok.code == 0, ok.out
    assert "PASS  headroom:H100_SXM" in ok.out
    assert "| headroom:H100_SXM | pass |" in summary.read_text()
    assert 'failures="0"' in junit.read_text()
    bad = run_cli(capsys, "gate", str(report), "--max-headroom", "1.5", "--junit", str(junit))
    assert bad.code == 1
    assert "FAIL  headroom:H100_SXM" in bad.out
    assert "<failure" in junit.read_text()


def test_gate_fails_on_a_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _report(tmp_path, capsys, measured_ms=0.5)  # faster than the 0.8335 ms bound
    r = run_cli(capsys, "gate", str(report))
    assert r.code == 1
    assert "violation:H100_SXM:fused" in r.out
    data = json.loads(report.read_text())
    assert data["archs"][0]["headroom"][1]["violation"] is True


def test_gate_regression_against_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _report(tmp_path, capsys, measured_ms=3.0)
    new = _report(tmp_path, capsys, measured_ms=4.0)
    r = run_cli(capsys, "gate", str(new), "--baseline", str(base), "--max-regression", "10")
    assert r.code == 1
    assert "+33.3%" in r.out
    r = run_cli(capsys, "gate", str(new), "--baseline", str(base), "--max-regression", "50")
    assert r.code == 0


def test_gate_requires_validation_and_coverage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(tmp_path, capsys, measured_ms=4.0)
    r = run_cli(capsys, "gate", str(report), "--require-validated", "--min-coverage", "99")
    assert r.code == 1  # hand-written IR without --reference is not validated
    assert "FAIL  validated" in r.out
    assert "PASS  coverage" in r.out


def test_gate_rejects_a_non_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    r = run_cli(capsys, "gate", str(bad))
    assert r.code == 1
    assert "error[E0703]" in r.err


def test_batch_isolates_a_broken_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "models"
    src.mkdir()
    for name in ("matmul", "softmax"):
        (src / f"{name}.alir").write_text(small_ir_text(SAMPLES / "ir" / f"{name}.alir"))
    (src / "broken.alir").write_text("solar-ir 1\nprogram b\nkernel k { A[ = 1 }\n")
    out = tmp_path / "out"
    r = run_cli(capsys, "batch", str(src), "--out", str(out), "--workers", "2")
    assert r.code == 1
    assert "2/3 ok, 1 failed" in r.out
    rows = json.loads((out / "summary.json").read_text())
    by_file = {Path(row["file"]).name: row for row in rows}
    assert by_file["broken.alir"]["status"] == "error"
    assert "E0104" in by_file["broken.alir"]["error"]
    assert by_file["matmul.alir"]["status"] == "ok"
    assert "matmul.alir" in (out / "summary.csv").read_text()
    again = run_cli(capsys, "batch", str(src), "--out", str(out), "--resume")
    assert "ok (resumed)" in again.err


def test_plot_writes_png_svg_and_pdf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    report = _report(tmp_path, capsys, measured_ms=4.0)
    for suffix in ("png", "svg", "pdf"):
        target = tmp_path / f"roofline.{suffix}"
        r = run_cli(capsys, "plot", str(report), "-o", str(target))
        assert r.code == 0, r.err
        assert target.stat().st_size > 1000
    r = run_cli(capsys, "plot", str(report), "-o", str(tmp_path / "x.gif"))
    assert r.code == 2


def test_specs_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "specs", "list")
    assert r.code == 0
    assert "H100_SXM" in r.out and "TPU_v5p" in r.out
    r = run_cli(capsys, "specs", "show", "h100-sxm")
    assert "dram_bandwidth_bytes_per_s: 3350000000000.0" in r.out
    assert "sources:" in r.out


def test_bounds_provision_and_compare(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "bounds", MATMUL, "--arch", "H100_SXM", "--set", "M=4096")
    assert r.code == 0 and "fused" in r.out
    r = run_cli(capsys, "provision", MATMUL, "--target-ms", "0.001", "--arch", "H100_SXM")
    assert r.code == 0 and "DRAM bandwidth" in r.out and "H100_SXM" in r.out
    r = run_cli(capsys, "compare", MATMUL, "--arch", "H100_SXM", "--arch", "B200")
    assert r.code == 0 and "B200" in r.out


def test_ir_run_and_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    out = tmp_path / "out.npz"
    r = run_cli(capsys, "ir", "run", MATMUL, "-o", str(out))
    assert r.code == 0 and "C: float32[32, 24]" in r.out
    from solar.ir import parse_program, resolve_sizes
    from solar.validate import random_inputs

    program = parse_program(Path(MATMUL).read_text())
    inputs = random_inputs(program, resolve_sizes(program), np.random.default_rng(0))
    ref = tmp_path / "ref.npz"
    np.savez(ref, **inputs, C=inputs["A"].astype(np.float64) @ inputs["B"])
    r = run_cli(capsys, "ir", "validate", MATMUL, "--reference", str(ref))
    assert r.code == 0, r.out + r.err
    np.savez(ref, **inputs, C=inputs["A"] @ inputs["B"] + 1.0)
    r = run_cli(capsys, "ir", "validate", MATMUL, "--reference", str(ref))
    assert r.code == 1
    assert "mismatch" in r.out


def test_a_bad_choice_is_a_usage_diagnostic_before_any_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, "analyze", "does/not/exist.py", "--precision", "fp7")
    assert r.code == 2
    assert "error[E0904]" in r.err and "fp7" in r.err
    assert "E0901" not in r.err  # rejected before the source file is looked at
    assert "Traceback" not in r.err


def test_every_bound_model_is_registered_under_its_option_name() -> None:
    from solar import options
    from solar.bounds import BOUND_MODELS

    assert tuple(BOUND_MODELS) == options.BOUND_MODEL_NAMES


@pytest.mark.torch
def test_provision_says_an_fp32_matmul_may_run_on_any_fp32_accurate_pipe(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 31: a matmul model's requirement is not "vector fp32" alone."""
    pytest.importorskip("torch")
    r = run_cli(capsys, "provision", str(SAMPLES / "torch" / "linear_gelu.py"),
                "--target-ms", "0.05", "-q")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    matmul = next(i for i, x in enumerate(lines) if "of matmul/convolution work" in x)
    assert lines[matmul].startswith("  vector:fp32     >= ")
    assert "tensor:3xtf32" in lines[matmul + 1] and "whichever the device has" in lines[matmul + 1]
    # the gelu's vector work keeps a line of its own, with no alternative pipe
    assert any(re.fullmatch(r"  vector:fp32     >= [\d.,]+ TFLOP/s", x) for x in lines)
