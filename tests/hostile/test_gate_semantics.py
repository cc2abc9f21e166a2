"""`solar gate` cannot be fooled (issue 15): every report that should fail, fails.

One genuine report is made once (matmul, a measured time far above its bounds); each
case edits a copy the way the red team did and asserts the exact diagnostic or the
failed check, the exit code, and that no traceback reaches stderr.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CliResult, run_cli
from conftest import SAMPLES

from solar.pipeline import AnalyzeOptions, analyze

Report = dict[str, Any]


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


@pytest.fixture(scope="module")
def genuine() -> Report:
    """A real report: matmul on H100_SXM measured at 1 ms (bounds are nanoseconds)."""
    options = AnalyzeOptions(archs=("H100_SXM",), measured_ms=1.0)
    data: Report = json.loads(analyze(SAMPLES / "ir" / "matmul.alir", options).to_json())
    return data


@pytest.fixture
def write(tmp_path: Path, genuine: Report) -> Callable[..., str]:
    """``write(edit, name)``: a copy of the genuine report after ``edit``, as a file."""

    def make(edit: Callable[[Report], object] | None = None, name: str = "r.json") -> str:
        data = copy.deepcopy(genuine)
        if edit is not None:
            edit(data)
        path = tmp_path / name
        path.write_text(json.dumps(data), encoding="utf-8")
        return str(path)

    return make


def _arch(data: Report) -> Report:
    arch: Report = data["archs"][0]
    return arch


def _bound(data: Report, model: str) -> Report:
    return next(b for b in _arch(data)["bounds"] if b["model"] == model)


def test_the_genuine_report_passes(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "gate", write(), "--max-headroom", "1e12", "--min-coverage", "100")
    assert r.code == 0, r.out + r.err
    assert "gate passed" in r.out


def test_empty_archs_fails(write: Callable[..., str], capsys: pytest.CaptureFixture[str]) -> None:
    def edit(d: Report) -> None:
        d["archs"] = []

    assert_diagnostic(run_cli(capsys, "gate", write(edit)), "E0707", 1)


def test_negative_infinity_ratio_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = write()
    text = Path(path).read_text()
    Path(path).write_text(re.sub(r'"ratio": [0-9.e+-]+', '"ratio": -Infinity', text, count=1))
    assert_diagnostic(run_cli(capsys, "gate", path), "E0702", 1)


@pytest.mark.parametrize("ratio", [0.5, -3.0, 0.0])
def test_a_ratio_below_one_marked_no_violation_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str], ratio: float
) -> None:
    def edit(d: Report) -> None:
        for h in _arch(d)["headroom"]:
            h["ratio"], h["violation"] = ratio, False

    assert_diagnostic(run_cli(capsys, "gate", write(edit)), "E0708", 1)


def test_violation_is_recomputed_not_read(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(d: Report) -> None:  # a measurement faster than every bound, headroom removed
        d["measurement"]["median_ms"] = 1e-12
        _arch(d)["headroom"] = []

    r = run_cli(capsys, "gate", write(edit))
    assert r.code == 1
    assert "FAIL  violation:H100_SXM:fused" in r.out
    assert "gate FAILED" in r.out


def test_a_report_missing_the_asked_bound_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(d: Report) -> None:
        a = _arch(d)
        a["bounds"] = [b for b in a["bounds"] if b["model"] != "fused"]
        a["headroom"] = [h for h in a["headroom"] if h["model"] != "fused"]

    assert_diagnostic(run_cli(capsys, "gate", write(edit), "--max-headroom", "9"), "E0710", 1)


@pytest.mark.parametrize("version", ["99.0", "0.9", "one", "2"])
def test_another_major_schema_version_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str], version: str
) -> None:
    def edit(d: Report) -> None:
        d["schema_version"] = version

    assert_diagnostic(run_cli(capsys, "gate", write(edit)), "E0706", 1)


def test_a_newer_minor_version_is_read(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(d: Report) -> None:
        d["schema_version"] = "1.9"

    assert run_cli(capsys, "gate", write(edit)).code == 0


@pytest.mark.parametrize(
    ("field", "value"),
    [("covered_bytes_fraction", 5.0), ("covered_bytes_fraction", -0.1), ("ops_total", -1)],
)
def test_coverage_out_of_range_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str], field: str, value: float
) -> None:
    def edit(d: Report) -> None:
        d["coverage"][field] = value

    r = run_cli(capsys, "gate", write(edit), "--min-coverage", "10")
    assert_diagnostic(r, "E0709", 1)


def test_a_measurement_under_an_arch_alias_has_headroom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "alias.json"
    matmul = str(SAMPLES / "ir" / "matmul.alir")
    r = run_cli(capsys, "analyze", matmul, "--arch", "h100-sxm", "--measured-ms", "1",
                "-o", str(report), "-q")  # fmt: skip
    assert r.code == 0, r.err
    assert json.loads(report.read_text())["measurement"]["arch"] == "H100_SXM"
    r = run_cli(capsys, "gate", str(report), "--max-headroom", "1e12")
    assert r.code == 0, r.out  # was "no measurement for H100_SXM"


# ------------------------------------------------------------------------ the baseline
def _gate_against(
    capsys: pytest.CaptureFixture[str], report: str, baseline: str, *extra: str
) -> CliResult:
    return run_cli(capsys, "gate", report, "--baseline", baseline, "--max-regression", "10", *extra)


def test_a_genuine_baseline_compares(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    r = _gate_against(capsys, write(), write(name="base.json"))
    assert r.code == 0, r.out + r.err
    assert "PASS  regression:H100_SXM: headroom" in r.out


def test_a_nan_baseline_bound_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    base = write(name="base.json")
    text = Path(base).read_text()
    Path(base).write_text(re.sub(r'"time_s": [0-9.e+-]+', '"time_s": NaN', text))
    assert_diagnostic(_gate_against(capsys, write(), base), "E0702", 1)


def test_a_negative_baseline_bound_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(d: Report) -> None:
        _bound(d, "fused")["time_s"] = -1.0
        _arch(d)["headroom"] = []

    assert_diagnostic(_gate_against(capsys, write(), write(edit, "base.json")), "E0709", 1)


def test_a_baseline_missing_the_bound_fails(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(d: Report) -> None:
        a = _arch(d)
        a["bounds"] = [b for b in a["bounds"] if b["model"] != "fused"]
        a["headroom"] = [h for h in a["headroom"] if h["model"] != "fused"]

    assert_diagnostic(_gate_against(capsys, write(), write(edit, "base.json")), "E0710", 1)


def test_a_zero_baseline_bound_is_an_infinite_regression(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(d: Report) -> None:  # no measurement: the bounds themselves are compared
        d["measurement"] = None
        _arch(d)["headroom"] = []

    def zero(d: Report) -> None:
        edit(d)
        _bound(d, "fused")["time_s"] = 0.0

    r = _gate_against(capsys, write(edit), write(zero, "base.json"))
    assert r.code == 1
    assert "FAIL  regression:H100_SXM" in r.out and "+inf%" in r.out


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(program="other"),
        lambda d: d["sizes"].update(M=64),
        lambda d: (d["archs"][0].update(arch="A100"), d["measurement"].update(arch="A100")),
        lambda d: d["archs"][0].update(precision_policy="bf16"),
        lambda d: d["input"].update(sha256="0" * 64),
        lambda d: d["input"].update(entry="m:f"),
    ],
    ids=["program", "sizes", "arch", "precision", "input-hash", "entry"],
)
def test_a_baseline_of_another_analysis_is_an_error(
    write: Callable[..., str],
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[Report], object],
) -> None:
    assert_diagnostic(_gate_against(capsys, write(), write(edit, "base.json")), "E0711", 1)


def test_allow_input_change_compares_two_versions(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(d: Report) -> None:
        d["input"]["sha256"] = "0" * 64

    r = _gate_against(capsys, write(), write(edit, "base.json"), "--allow-input-change")
    assert r.code == 0, r.out + r.err


# ------------------------------------------------------------------------ options, outputs
@pytest.mark.parametrize(
    "args",
    [
        ["--max-headroom", "nan"],
        ["--max-headroom", "-1"],
        ["--max-headroom", "inf"],
        ["--min-coverage", "500"],
        ["--min-coverage", "nan"],
    ],
)
def test_a_threshold_out_of_range_is_a_usage_error(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert_diagnostic(run_cli(capsys, "gate", write(), *args), "E0905", 2)


def test_a_baseline_without_a_regression_limit_is_a_usage_error(
    write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "gate", write(), "--baseline", write(name="base.json"))
    assert_diagnostic(r, "E0705", 2)


def test_junit_and_summary_into_a_missing_directory_are_created(
    write: Callable[..., str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit, summary = tmp_path / "new" / "j.xml", tmp_path / "other" / "deep" / "s.md"
    r = run_cli(capsys, "gate", write(), "--junit", str(junit), "--summary", str(summary))
    assert r.code == 0, r.err
    assert 'failures="0"' in junit.read_text()
    assert "PASSED" in summary.read_text()


@pytest.mark.parametrize("option", ["--junit", "--summary"])
def test_an_unwritable_junit_or_summary_fails_before_the_verdict(
    write: Callable[..., str], tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run_cli(capsys, "gate", write(), option, str(blocker / "out"))
    assert_diagnostic(r, "E0941", 2)
    assert "gate passed" not in r.out
    r = run_cli(capsys, "gate", write(), option, str(tmp_path))
    assert_diagnostic(r, "E0940", 2)
    assert r.out == ""


def test_github_step_summary_is_appended(
    write: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "step_summary.md"
    target.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
    assert run_cli(capsys, "gate", write()).code == 0
    text = target.read_text()
    assert text.startswith("earlier step\n") and "SOLAR gate" in text


# ----------------------------------------- strict types and printable names (issue 30, 6)
def _all_bounds(value: object) -> Callable[[Report], None]:
    def edit(d: Report) -> None:
        for b in _arch(d)["bounds"]:
            for k in ("time_s", "compute_time_s", "memory_time_s"):
                b[k] = value
        _arch(d)["headroom"] = []

    return edit


def _set(path: tuple[object, ...], value: object) -> Callable[[Report], None]:
    def edit(d: Report) -> None:
        node: Any = d
        for key in path[:-1]:
            node = node[key]  # type: ignore[index]
        node[path[-1]] = value  # type: ignore[index]

    return edit


COERCED = {  # each was coerced (a string or boolean read as a number), then gated
    "every bound true, measured 2000 ms": _all_bounds(True),
    "every bound a numeric string": _all_bounds("0.001"),
    "measured time a string": _set(("measurement", "median_ms"), "2000"),
    "measured time true": _set(("measurement", "median_ms"), True),
    "a size a string": _set(("sizes", "M"), "32"),
    "a size a float": _set(("sizes", "M"), 32.0),
    "flops a boolean": _set(("flops",), False),
    "coverage fraction a string": _set(("coverage", "covered_bytes_fraction"), "1"),
    "a violation flag an integer": _set(("archs", 0, "headroom", 0, "violation"), 0),
    "the program a number": _set(("program",), 7),
    "the arch a list": _set(("archs", 0, "arch"), ["H100_SXM"]),
}


@pytest.mark.parametrize("case", COERCED, ids=list(COERCED))
def test_a_value_of_the_wrong_type_is_not_coerced(
    case: str, write: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    r = run_cli(capsys, "gate", write(COERCED[case]), "--max-headroom", "1e12")
    assert_diagnostic(r, "E0703", 1)
    assert "PASS" not in r.out


NAMES = {
    "a forged log line": "matmul\nPASS  headroom:H100_SXM: forged",
    "an escape sequence": "matmul\x1b[2K\x1b[1Agate passed",
    "a right-to-left override": "matmul\u202egnp.live",
    "a bidi isolate": "matmul\u2066x\u2069",
}


@pytest.mark.parametrize("case", NAMES, ids=list(NAMES))
def test_control_and_bidi_characters_in_names_are_escaped(
    case: str, write: Callable[..., str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = NAMES[case]
    junit = tmp_path / "j.xml"
    r = run_cli(capsys, "gate", write(_set(("program",), name)), "--junit", str(junit),
                "--summary", str(tmp_path / "s.md"))  # fmt: skip
    assert r.code == 0, r.err
    for text in (r.out, junit.read_text(), (tmp_path / "s.md").read_text()):
        assert not any(ch in text for ch in "\x1b\u202e\u2066\u2069"), text
    assert r.out.count("\n") == len(r.out.strip().splitlines())  # no forged line
    assert sum(line.startswith("PASS") for line in r.out.splitlines()) == 1  # the report check
    if "\u202e" in name:
        pytest.importorskip("matplotlib")
        from solar.report import load_report
        from solar.report.plot import _title

        report = load_report(Path(write(_set(("program",), name), name="p.json")))
        assert "\u202e" not in _title(report, report.archs[0])
