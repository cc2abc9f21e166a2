"""`solar sweep` on hostile inputs: coded diagnostics, checks before allocation, no hangs.

Issue 30: sweep YAML with wrong types, 5000-digit integers or 20,000-deep nesting was
E0999; ``--set M=1..1000000000`` built the range before the point limit; ``/dev/zero``
as the model was read until the OOM killer came; a FIFO as the model, the journal or
a report blocked in ``open()``; tampered ``--resume`` journal lines were E0999 or put
``fused_s: -1`` in the table; an unwritable ``--out`` was found after the capture;
a folder in the way of the Parquet table left ``.tmp`` behind. Each case asserts the
exit code, the error code and that no traceback reaches stderr.
"""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import CliResult, make_hostile_path, run_cli
from conftest import ROOT, SAMPLES

MATMUL = SAMPLES / "ir" / "matmul.alir"


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


def _sweep(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    return run_cli(capsys, "sweep", *args, "--table", "csv", "--workers", "1")


# ------------------------------------------------------------------ sweep files
DEEP = "a: " + "[" * 20_000 + "]" * 20_000
SWEEP_FILES = {  # (YAML after `model: m.alir`, code)
    "set is a list": ("set: [1, 2]", "E0933"),
    "values are strings in a list": ("set: {M: ['1', '2']}", "E0933"),
    "values are booleans": ("set: {M: [true, false]}", "E0933"),
    "a 5000-digit value": ("set: {M: " + "9" * 5000 + "}", "E0933"),
    "a 5000-digit list value": ("set: {M: [" + "9" * 5000 + "]}", "E0933"),
    "a value above int64": (f"set: {{M: [{2**63}]}}", "E0933"),
    "a range of a billion points": ("set: {M: {from: 1, to: 1000000000}}", "E0934"),
    "a range of floats": ("set: {M: {from: 1.5, to: 8}}", "E0933"),
    "20,000-deep nesting": (DEEP, "E0933"),
    "time_budget_s: -5": ("time_budget_s: -5", "E0933"),
    "time_budget_s: .nan": ("time_budget_s: .nan", "E0933"),
    "time_budget_s: a string": ("time_budget_s: soon", "E0933"),
    "time_budget_s: true": ("time_budget_s: true", "E0933"),
    "validate: maybe": ("validate: maybe", "E0933"),
    "cache: hot": ("cache: hot", "E0933"),
    "frontend: 7": ("frontend: 7", "E0933"),
    "arch: a number": ("arch: 7", "E0933"),
    "entry: a list of lists": ("entry: [[a]]", "E0933"),
    "a size name that is not a name": ("set: {'M N': [1]}", "E0933"),
    "an unknown key": ("colour: blue", "E0933"),
    "not a mapping": (None, "E0933"),
}


@pytest.mark.parametrize("case", SWEEP_FILES, ids=list(SWEEP_FILES))
def test_a_bad_sweep_file_is_a_usage_error(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, code = SWEEP_FILES[case]
    (tmp_path / "m.alir").write_text(MATMUL.read_text())
    path = tmp_path / "sweep.yaml"
    path.write_text("- just a list\n" if text is None else f"model: m.alir\n{text}\n")
    r = _sweep(capsys, str(path), "--out", str(tmp_path / "out"))
    assert_diagnostic(r, code, 2)
    assert not (tmp_path / "out").exists()  # refused before any output


AXES = {  # --set VALUE -> code
    "M=1..1000000000": "E0934",
    "M=1..1000000000000000000:1": "E0934",
    "M=" + "9" * 5000: "E0933",
    "M=1.." + "9" * 5000: "E0933",
    f"M={2**63}": "E0933",
    "M=0": "E0933",
    "M=8..1:1": "E0933",
    "M=1..8:0": "E0933",
}


@pytest.mark.parametrize("axis", AXES, ids=[a[:24] for a in AXES])
def test_a_bad_axis_is_refused_before_anything_is_built(
    axis: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = _sweep(capsys, str(MATMUL), "--set", axis, "--out", str(tmp_path / "out"))
    assert_diagnostic(r, AXES[axis], 2)


def test_a_billion_point_product_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = _sweep(
        capsys, str(MATMUL), "--set", "M=1..1000", "--set", "N=1..1000", "--set", "K=1..1000",
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert_diagnostic(r, "E0934", 2)


# --------------------------------------------------------------- hostile paths
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "huge"])
def test_a_model_that_is_not_a_file_is_refused_unread(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = make_hostile_path(tmp_path / "m.py", kind)
    r = _sweep(capsys, str(model), "--set", "N=8", "--out", str(tmp_path / "out"))
    assert_diagnostic(r, "E0943" if kind == "huge" else "E0902", 2)


BLOCKERS = {  # (command, what is in the way) -> argv after the command
    ("sweep", "reports"): ("--set", "M=8", "--validate", "off", "--table", "csv"),
    ("sweep", "logs"): ("--set", "M=8", "--validate", "off", "--table", "csv"),
    ("sweep", "sweep.csv"): ("--set", "M=8", "--validate", "off", "--table", "csv"),
    ("sweep", "sweep.json"): ("--set", "M=8", "--validate", "off", "--table", "csv"),
    ("batch", "logs"): (),
    ("batch", "summary.csv"): (),
    ("batch", "summary.json"): (),
}


@pytest.mark.parametrize("case", BLOCKERS, ids=[f"{c} {b}" for c, b in BLOCKERS])
def test_an_unwritable_output_fails_before_any_work(
    case: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command, blocker = case
    out = tmp_path / "out"
    out.mkdir()
    is_file = "." in blocker
    if is_file:
        (out / blocker).mkdir()  # a folder where the file goes
    else:
        (out / blocker).write_text("a file where a folder goes")
    r = run_cli(capsys, command, str(MATMUL), "--out", str(out), *BLOCKERS[case])
    assert_diagnostic(r, "E0940" if is_file else "E0941", 2)
    written = [p for p in out.rglob("*") if p.is_file() and p.name != blocker]
    assert not written  # no capture, no report, no log


def test_a_folder_in_the_way_of_the_parquet_table_leaves_no_tmp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow")
    out = tmp_path / "out"
    (out / "sweep.parquet").mkdir(parents=True)
    r = run_cli(capsys, "sweep", str(MATMUL), "--set", "M=8", "--out", str(out))
    assert_diagnostic(r, "E0940", 2)
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("where", ["journal", "report"])
def test_a_fifo_to_resume_is_not_waited_on(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args, _ = _finished_sweep(capsys, out, "8,16")
    target = out / "sweep.journal.jsonl" if where == "journal" else next(out.glob("reports/*"))
    target.unlink()
    os.mkfifo(target)
    r = _sweep(capsys, *args, "--resume")  # blocked in open() before
    assert_diagnostic(r, "E0941", 2)  # a FIFO nobody reads cannot be written either


# ------------------------------------------------------------ resume journals
def _finished_sweep(
    capsys: pytest.CaptureFixture[str], out: Path, values: str
) -> tuple[tuple[str, ...], list[dict[str, object]]]:
    """A finished sweep into ``out``: its arguments and its journal's lines."""
    args = (str(MATMUL), "--set", f"M={values}", "--out", str(out), "--validate", "off")
    assert _sweep(capsys, *args).code == 0
    journal = (out / "sweep.journal.jsonl").read_text()
    return args, [json.loads(line) for line in journal.splitlines()]


def _resumed_rows(
    capsys: pytest.CaptureFixture[str], out: Path, args: tuple[str, ...], journal: str
) -> list[dict[str, str]]:
    """The table's rows after ``--resume`` over ``journal``, which ends without an error."""
    (out / "sweep.journal.jsonl").write_text(journal)
    r = _sweep(capsys, *args, "--resume")
    assert r.code == 0, r.err
    assert "Traceback" not in r.err
    return list(csv.DictReader((out / "sweep.csv").open()))


TAMPERED = {  # a change to the first row of the journal's first line
    "fused_s: -1": lambda row: row.update(fused_s=-1.0),
    "fused_s: NaN": lambda row: row.update(fused_s=float("nan")),
    "fractional size": lambda row: row.update(size_M=8.5),
    "size as a string": lambda row: row.update(size_M="8"),
    "size 2**63": lambda row: row.update(size_M=2**63),
    "status as a list": lambda row: row.update(status=["ok"]),
    "missing precision": lambda row: row.pop("precision"),
    "a nested object": lambda row: row.update(error={"a": 1}),
}


@pytest.mark.parametrize("case", TAMPERED, ids=list(TAMPERED))
def test_a_tampered_journal_row_is_bound_again(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args, lines = _finished_sweep(capsys, out, "8")
    TAMPERED[case](lines[0]["rows"][0])  # type: ignore[index]
    rows = _resumed_rows(capsys, out, args, "".join(json.dumps(e) + "\n" for e in lines))
    assert [(row["size_M"], row["resumed"]) for row in rows] == [("8", "")]  # bound again
    assert float(rows[0]["fused_s"]) > 0


BAD_LINES = {
    "not JSON": "{torn",
    "a list": "[1, 2]",
    "NaN": '{"format": "solar-sweep-row/1", "capture": NaN}',
    "capture a string": None,  # built from the real line below
    "rows an object": None,
    "reports a list": None,
    "200,000-deep": "[" * 200_000 + "]" * 200_000,
}


@pytest.mark.parametrize("case", BAD_LINES, ids=list(BAD_LINES))
def test_a_malformed_journal_line_is_skipped(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    args, lines = _finished_sweep(capsys, out, "8,16")
    first = dict(lines[0])
    bad = BAD_LINES[case]
    if bad is None:
        key = case.split()[0]
        first[key] = {"capture": "0", "rows": {"a": 1}, "reports": ["x"]}[key]
        bad = json.dumps(first)
    text = bad + "\n" + "".join(json.dumps(e) + "\n" for e in lines[1:])
    rows = _resumed_rows(capsys, out, args, text)
    assert sorted(row["size_M"] for row in rows) == ["16", "8"]
    assert sum(row["resumed"] == "yes" for row in rows) == len(lines) - 1


# ------------------------------------------------------------------- signals
@pytest.mark.torch
@pytest.mark.slow  # a fresh interpreter importing torch
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals")
def test_sighup_ends_a_sweep_with_its_table(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    model = tmp_path / "slow.py"
    started = tmp_path / "started"
    model.write_text(
        "import time, torch\nN = 8\n"
        "class Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        f"        open({str(started)!r}, 'w').close()\n"
        "        time.sleep(600)\n        return x\n"
        "def get_inputs():\n    return [torch.randn(N)]\n"
    )
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "solar", "sweep", str(model), "--set", "N=8", "--out", str(out),
         "--table", "csv", "--workers", "1"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        import time

        deadline = time.monotonic() + 300
        while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert started.exists(), proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGHUP, err
    assert "stopped by SIGHUP" in err
    assert (out / "sweep.csv").is_file()
    assert "Traceback" not in err
