"""Text a user wrote, refused with a code before it costs time or memory (red team, round 4).

Each row is one hostile input found failing before this round: E0999 (an integer of 5000
digits in the IR's version line, a ``--parallel`` or ``--fail`` value, a plan file; the
memory message of a program of 2000 dims), or a hang (a YAML "billion laughs" of nine
aliases, a YAML alias to its own anchor: `solar.files.check_data`). Every case asserts
the exit code, the error code and that no traceback reaches stderr, and runs in-process
on hand-written IR (no torch).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import CliResult, run_cli
from conftest import SAMPLES

MATMUL = SAMPLES / "ir" / "matmul.alir"
DIGITS = "9" * 5000

BOMB = "".join(  # nine lines of aliases: 9**9 strings once expanded
    f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9 if i else ['"lol"'] * 9) + "]\n"
    for i in range(9)
)


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


def _ir(tmp_path: Path, old: str, new: str) -> str:
    path = tmp_path / "p.alir"
    path.write_text(MATMUL.read_text().replace("4096", "4").replace(old, new, 1))
    return str(path)


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _plan(tmp_path: Path, text: str) -> list[str]:
    plan = _file(tmp_path, "plan.yaml", text)
    return ["analyze", str(MATMUL), "-q", "--cluster", "DGX_H100", "--plan", plan]


def _sweep(tmp_path: Path, text: str) -> list[str]:
    spec = _file(tmp_path, "sweep.yaml", f"model: {MATMUL}\n{text}")
    return ["sweep", spec, "--out", str(tmp_path / "out"), "--table", "csv", "--workers", "1"]


def _cluster(*extra: str) -> list[str]:
    return ["analyze", str(MATMUL), "-q", "--cluster", "DGX_H100", *extra]


Argv = Callable[[Path], list[str]]
CASES: dict[str, tuple[Argv, str, int]] = {  # argv -> (code, exit); before: E0999 or a hang
    "IR version of 5000 digits": (
        lambda t: ["ir", "check", _ir(t, "solar-ir 1", f"solar-ir {DIGITS}")], "E0105", 1),
    "IR version of 5000 digits, analyze": (
        lambda t: ["analyze", _ir(t, "solar-ir 1", f"solar-ir {DIGITS}"), "-q"], "E0105", 1),
    "ir run of a 2000-dim tensor (memory message)": (
        lambda t: ["ir", "run", _file(t, "d.alir", "solar-ir 1\nprogram p\n"
                   f"input A : f32[{', '.join(['2'] * 2000)}]\n"
                   f"output C : f32[{', '.join(['2'] * 2000)}]\nkernel k {{\n"
                   f" C[{', '.join(['0'] * 2000)}] = A[{', '.join(['0'] * 2000)}]\n}}\n")],
        "E0305", 1),
    "--parallel tp of 5000 digits": (lambda t: _cluster("--parallel", f"tp={DIGITS}"), "E0804", 2),
    "--parallel dp of 30 digits": (lambda t: _cluster("--parallel", "dp=1" + "0" * 30), "E0804", 2),
    "--fail stage of 5000 digits": (
        lambda t: _cluster("--parallel", "dp=2", "--fail", f"stage={DIGITS}:k=1"), "E0804", 2),
    "--fail k of 5000 digits": (
        lambda t: _cluster("--parallel", "dp=2", "--fail", f"stage=0:k={DIGITS}"), "E0804", 2),
    "plan file: tp of 5000 digits": (lambda t: _plan(t, f"parallel: {{tp: {DIGITS}}}\n"),
                                     "E0805", 2),
    "plan file: 50,000-deep nesting": (
        lambda t: _plan(t, "a: " + "[" * 50_000 + "]" * 50_000 + "\n"), "E0805", 2),
    "plan file: tp .nan": (lambda t: _plan(t, "parallel: {tp: .nan}\n"), "E0805", 2),
    "plan file: a billion laughs": (lambda t: _plan(t, BOMB + "parallel: {tp: 1}\n"),
                                    "E0805", 2),
    "plan file: an alias to its own anchor": (
        lambda t: _plan(t, "parallel: &p {tp: 1, x: [*p]}\n"), "E0805", 2),
    "sweep file: a billion laughs as the sizes": (lambda t: _sweep(t, BOMB + "set: {M: *a8}\n"),
                                                  "E0933", 2),
    "sweep file: a billion laughs as the entry": (lambda t: _sweep(t, BOMB + "entry: *a8\n"),
                                                  "E0933", 2),
    "sweep file: an alias to its own anchor": (lambda t: _sweep(t, "set: &s {M: [*s]}\n"),
                                               "E0933", 2),
    "a hardware spec holding a NUL": (
        lambda t: ["specs", "show", _file(t, "s.yaml", "name: a\0b\n")], "E0402", 2),
    "-o a name too long for the file system": (
        lambda t: ["analyze", str(MATMUL), "-q", "-o", str(t / ("x" * 300))], "E0941", 2),
    "--save-ir a name too long for the file system": (
        lambda t: ["analyze", str(MATMUL), "-q", "--save-ir", str(t / ("x" * 300))], "E0941", 2),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_hostile_text_is_a_coded_error(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, code, exit_code = CASES[case]
    r = run_cli(capsys, *argv(tmp_path))
    assert_diagnostic(r, code, exit_code)


SHOWN = {  # IR text -> what its diagnostic's source line shows (escaped, a window)
    "a right-to-left override": ("program mat\u202emul", "3 | program mat\\u202emul"),
    "a NUL byte": ("program mat\0mul", "3 | program mat\\x00mul"),
    "a bell": ("program mat\amul", "3 | program mat\\x07mul"),
}


@pytest.mark.parametrize("case", SHOWN, ids=list(SHOWN))
def test_a_source_line_is_shown_escaped(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, line = SHOWN[case]
    r = run_cli(capsys, "ir", "check", _ir(tmp_path, "program matmul", name))
    assert_diagnostic(r, "E0101", 1)
    assert line in r.err.splitlines()  # before: the raw character, reversing the line
    caret = r.err.splitlines()[r.err.splitlines().index(line) + 1]
    assert caret.index("^") == line.index("\\")  # the caret under the escaped character


def test_a_long_line_is_shown_as_a_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_name = "m" * 1_000_000  # before: the diagnostic printed the whole 1 MB line
    r = run_cli(capsys, "ir", "check", _ir(tmp_path, "program matmul", f"program {long_name}!"))
    assert_diagnostic(r, "E0101", 1)
    assert len(r.err) < 2000
    assert "...mmm" in r.err and "!" in r.err


def test_ir_run_writes_its_archive_to_a_device(capsys: pytest.CaptureFixture[str]) -> None:
    softmax = SAMPLES / "ir" / "softmax.alir"
    r = run_cli(capsys, "ir", "run", str(softmax), "--set", "B=4", "--set", "N=4",
                "-o", "/dev/null")
    assert r.code == 0, r.err  # before: E0999, a zip writer cannot seek on /dev/null
    assert "wrote /dev/null" in r.err + r.out


def test_plot_of_a_report_with_a_huge_program_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    import json

    report = tmp_path / "r.json"
    assert run_cli(capsys, "analyze", str(MATMUL), "-q", "-o", str(report)).code == 0
    data = json.loads(report.read_text())
    data["program"] = "p" * 10_000_000  # before: matplotlib laid out a 10 MB title (hung)
    report.write_text(json.dumps(data))
    r = run_cli(capsys, "plot", str(report), "-o", str(tmp_path / "r.png"))
    assert r.code == 0, r.err
    assert (tmp_path / "r.png").stat().st_size > 1000


MOE_LOADS = {  # a --moe-load CSV -> what it declares (before: a huge array, or accepted)
    "a step index of 10**9": ("step,layer,expert,tokens\n1000000000,0,0,5\n", "over the limit"),
    "an expert index of 10**14": ("step,layer,expert,tokens\n0,0,99999999999999,5\n",
                                  "over the limit"),
    "a negative step": ("step,layer,expert,tokens\n-1,0,0,5\n", "negative"),
}


@pytest.mark.parametrize("case", MOE_LOADS, ids=list(MOE_LOADS))
def test_a_moe_load_is_checked_before_its_array_is_allocated(case: str, tmp_path: Path) -> None:
    from solar.diagnostics import PlanError
    from solar.distributed.moe import load_expert_load

    text, message = MOE_LOADS[case]
    path = tmp_path / "load.csv"
    path.write_text(text)
    with pytest.raises(PlanError, match=message) as err:  # before: 8 GB for 10**9 steps
        load_expert_load(path)
    assert err.value.code == "E0810"
