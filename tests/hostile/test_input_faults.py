"""Input faults end in their own coded diagnostic, never E0999 (issue 15).

Each case was an ``error[E0999]: internal error`` (exit 2), an "aborted" or a silent
exit 0 before; each asserts the exact code, the exit code (1: the input is at fault,
2: usage), and that no traceback reaches stderr. docs/reliability.md has the table.
"""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import CliResult, run_cli
from conftest import SAMPLES
from sample_sizes import small_ir_path

MATMUL = small_ir_path("matmul")  # the sample at its small test sizes


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


def _ir(tmp_path: Path, old: str, new: str, name: str = "p.alir") -> str:
    path = tmp_path / name
    path.write_text(MATMUL.read_text().replace(old, new, 1))
    return str(path)


# ------------------------------------------------------------------------ IR text
def test_size_2_pow_62_in_ir_run_is_a_memory_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = _ir(tmp_path, "size M = 32", f"size M = {2**62}")
    assert_diagnostic(run_cli(capsys, "ir", "run", big), "E0305", 1)
    assert_diagnostic(run_cli(capsys, "ir", "run", str(MATMUL), "--set", f"K={2**62}"), "E0305", 1)


def test_size_2_pow_62_still_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = _ir(tmp_path, "size M = 32", f"size M = {2**62}")
    r = run_cli(capsys, "analyze", big, "--format", "json", "-q")
    assert r.code == 0, r.err
    assert json.loads(r.out)["sizes"]["M"] == 2**62


def test_a_5000_digit_literal_is_a_syntax_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _ir(tmp_path, "size M = 32", "size M = " + "9" * 5000)
    assert_diagnostic(run_cli(capsys, "analyze", path), "E0105", 1)
    assert_diagnostic(run_cli(capsys, "ir", "check", path), "E0105", 1)


def test_a_size_above_int64_is_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("analyze", "bounds"):
        r = run_cli(capsys, command, str(MATMUL), "--set", f"M={10**400}")
        assert_diagnostic(r, "E0221", 1)  # was E0999: OverflowError converting to float


def test_a_5000_digit_set_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "analyze", str(MATMUL), "--set", "M=" + "9" * 5000)
    assert_diagnostic(r, "E0903", 2)


def test_a_binary_alir_is_not_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bin.alir"
    path.write_bytes(bytes(range(256)) * 8)
    assert_diagnostic(run_cli(capsys, "analyze", str(path)), "E0902", 2)
    assert_diagnostic(run_cli(capsys, "ir", "check", str(path)), "E0902", 2)


def test_a_directory_as_the_ir_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_diagnostic(run_cli(capsys, "ir", "fmt", str(tmp_path)), "E0902", 2)


# ------------------------------------------------------------------------ data files
def _npz_cases(tmp_path: Path) -> dict[str, Path]:
    good = tmp_path / "good.npz"
    np.savez(good, A=np.zeros((32, 16), "f4"), B=np.zeros((16, 24), "f4"))
    raw = good.read_bytes()
    cases = {
        "empty": b"",
        "truncated": raw[: len(raw) // 2],
        "random": bytes((i * 37 + 11) % 256 for i in range(600)),
    }
    out = {}
    for name, data in cases.items():
        out[name] = tmp_path / f"{name}.npz"
        out[name].write_bytes(data)
    out["npy"] = tmp_path / "a.npy"
    np.save(out["npy"], np.zeros((32, 16), "f4"))
    out["not-an-array"] = tmp_path / "zip.npz"
    with zipfile.ZipFile(out["not-an-array"], "w") as zf:
        zf.writestr("A.txt", "hello")
    return out


@pytest.mark.parametrize("case", ["empty", "truncated", "random", "npy", "not-an-array"])
def test_a_bad_npz_is_coded_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path = str(_npz_cases(tmp_path)[case])
    m = str(MATMUL)
    assert_diagnostic(run_cli(capsys, "ir", "run", m, "--inputs", path), "E0942", 2)
    assert_diagnostic(run_cli(capsys, "ir", "validate", m, "--reference", path), "E0942", 2)
    assert_diagnostic(run_cli(capsys, "analyze", m, "--reference", path), "E0942", 2)


def test_a_missing_npz(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = run_cli(capsys, "ir", "run", str(MATMUL), "--inputs", str(tmp_path / "no.npz"))
    assert_diagnostic(r, "E0901", 2)


def test_deeply_nested_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, text in (
        ("list", "[" * 5000 + "]" * 5000),
        ("obj", '{"a":' * 5000 + "1" + "}" * 5000),
    ):
        path = tmp_path / f"{name}.json"
        path.write_text(text)
        assert_diagnostic(run_cli(capsys, "gate", str(path)), "E0702", 1)
        assert_diagnostic(
            run_cli(capsys, "plot", str(path), "-o", str(tmp_path / "x.png")), "E0702", 1
        )


def test_a_5000_digit_integer_in_a_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"schema_version": "1.0", "sizes": {"M": ' + "9" * 5000 + "}}")
    assert_diagnostic(run_cli(capsys, "gate", str(path)), "E0702", 1)


def test_deeply_nested_yaml_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 1000 + "]" * 1000 + "\n")  # over the recursion limit
    assert_diagnostic(run_cli(capsys, "analyze", str(MATMUL), "--arch", str(path)), "E0402", 2)


def test_a_5000_digit_integer_in_a_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "digits.yaml"
    path.write_text("name: x\ndram_bandwidth_bytes_per_s: " + "9" * 5000 + "\n")
    assert_diagnostic(run_cli(capsys, "specs", "show", str(path)), "E0402", 2)


# ------------------------------------------------------------------------ option values
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e308", "0", "-1"])
def test_measured_ms_out_of_range(capsys: pytest.CaptureFixture[str], value: str) -> None:
    r = run_cli(capsys, "analyze", str(MATMUL), "--measured-ms", value)
    assert_diagnostic(r, "E0905", 2)


@pytest.mark.parametrize("value", ["nan", "0", "-1"])
def test_time_budget_out_of_range(capsys: pytest.CaptureFixture[str], value: str) -> None:
    r = run_cli(capsys, "analyze", str(MATMUL), "--time-budget", value)
    assert_diagnostic(r, "E0905", 2)


# ------------------------------------------------------------------------ validation outcome
def test_a_validation_error_does_not_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = tmp_path / "partial.npz"  # B is missing: the check cannot run
    np.savez(ref, A=np.zeros((32, 16), "f4"), C=np.zeros((32, 24), "f4"))
    r = run_cli(capsys, "analyze", str(MATMUL), "--reference", str(ref), "--format", "json")
    assert_diagnostic(r, "E0300", 1)
    assert json.loads(r.out)["validation"]["status"] == "error"  # the report is still shown


def test_a_validation_mismatch_exits_1_with_a_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = tmp_path / "wrong.npz"
    np.savez(ref, A=np.ones((32, 16), "f4"), B=np.ones((16, 24), "f4"), C=np.zeros((32, 24), "f4"))
    r = run_cli(capsys, "analyze", str(MATMUL), "--reference", str(ref), "-q")
    assert_diagnostic(r, "E0310", 1)
    assert "validation: FAILED" in r.out or "FAIL" in r.out


# ------------------------------------------------------------------------ torch programs
@pytest.mark.torch
@pytest.mark.slow
def test_ir_flag_naming_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    model = str(SAMPLES / "torch" / "bmm.py")
    r = run_cli(capsys, "analyze", model, "--ir", str(tmp_path / "missing.alir"), "-q")
    assert_diagnostic(r, "E0901", 2)  # a binary one is E0902: the reader tested above


@pytest.mark.torch
@pytest.mark.slow
def test_entry_inputs_npz_that_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "fn.py"
    src.write_text("import torch\n\ndef f(x):\n    return x * 2\n")
    empty = tmp_path / "in.npz"
    empty.write_bytes(b"")
    r = run_cli(capsys, "analyze", str(src), "--entry", "fn:f", "--inputs", str(empty), "-q")
    assert_diagnostic(r, "E0942", 2)  # as every invalid .npz (docs/reliability.md)
