"""A property over the CLI (issue 15): any argument value ends in success or a coded
diagnostic with exit 1 or 2, never E0999 and never a traceback.

Hypothesis draws a subcommand with one hostile value (non-finite and huge floats, huge,
zero and negative sizes, non-numbers) on cheap inputs (matmul IR, a genuine report), or
one hostile path (a FIFO, ``/dev/zero``, a directory, a sparse file over every size
limit, a binary file, a missing file) in any input position: no command may hang on it,
read it without bound, or end in E0999.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solar.pipeline import AnalyzeOptions, analyze

MATMUL = str(SAMPLES / "ir" / "matmul.alir")

NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e999", "-1e999", "nan", "-0", "1e-320", "", "abc", "0x10", "1_0"]),
)
SIZES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 2**31, 2**62, 2**63, 2**64, 10**400]),
).map(str)


@pytest.fixture(scope="module")
def report_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A genuine report with a measurement (matmul on H100_SXM, measured at 1 ms)."""
    options = AnalyzeOptions(archs=("H100_SXM",), measured_ms=1.0)
    path = tmp_path_factory.mktemp("fuzz") / "r.json"
    path.write_text(analyze(Path(MATMUL), options).to_json())
    return str(path)


def _commands(report: str) -> st.SearchStrategy[list[str]]:
    number_options = [
        ["analyze", MATMUL, "-q", "--measured-ms"],
        ["analyze", MATMUL, "-q", "--time-budget"],
        ["analyze", MATMUL, "-q", "--time-limit"],
        ["provision", MATMUL, "--target-ms"],
        ["gate", report, "--max-headroom"],
        ["gate", report, "--min-coverage"],
        ["gate", report, "--baseline", report, "--max-regression"],
    ]
    size_options = [
        ["analyze", MATMUL, "-q", "--set"],
        ["bounds", MATMUL, "--set"],
        ["compare", MATMUL, "--arch", "H100_SXM", "--set"],
    ]
    with_number = st.tuples(st.sampled_from(number_options), NUMBERS).map(lambda t: [*t[0], t[1]])
    with_size = st.tuples(st.sampled_from(size_options), st.sampled_from("MNK"), SIZES).map(
        lambda t: [*t[0], f"{t[1]}={t[2]}"]
    )
    return st.one_of(with_number, with_size)


@pytest.mark.slow
@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_value_ends_in_success_or_a_coded_diagnostic(
    data: st.DataObject, report_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = data.draw(_commands(report_path))
    r = run_cli(capsys, *argv)
    assert r.code in (0, 1, 2), (argv, r.code, r.err)
    assert "E0999" not in r.err and "Traceback" not in r.err, (argv, r.err)
    if r.code != 0:
        coded = re.search(r"^error\[E\d{4}\]", r.err, re.MULTILINE)
        failed_gate = argv[0] == "gate" and "gate FAILED" in r.out
        no_such_option = "No such option" in r.err or "Usage:" in r.err
        assert coded or failed_gate or no_such_option, (argv, r.out, r.err)


_PATH_SLOTS = [
    ["analyze", "{}", "-q"],
    ["analyze", MATMUL, "-q", "--reference", "{}"],
    ["analyze", MATMUL, "-q", "--arch", "{}"],
    ["analyze", MATMUL, "-q", "--ir", "{}"],
    ["bounds", "{}"],
    ["compare", "{}", "--arch", "H100_SXM"],
    ["ir", "check", "{}"],
    ["ir", "fmt", "{}"],
    ["ir", "run", "{}"],
    ["ir", "run", MATMUL, "--inputs", "{}"],
    ["ir", "validate", MATMUL, "--reference", "{}"],
    ["gate", "{}"],
    ["gate", "{report}", "--baseline", "{}", "--max-regression", "5"],
    ["plot", "{}", "-o", "{tmp}/p.png"],
    ["specs", "show", "{}"],
]


@pytest.fixture(scope="module")
def hostile_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Paths that are not readable inputs, each named by its kind."""
    import os

    tmp = tmp_path_factory.mktemp("paths")
    fifo = tmp / "pipe"
    os.mkfifo(fifo)
    huge = tmp / "huge.alir"
    with huge.open("wb") as fh:
        fh.truncate(9 << 30)  # sparse: over every limit, nothing written
    binary = tmp / "bin.alir"
    binary.write_bytes(bytes(range(256)) * 64)
    return {
        "fifo": str(fifo),
        "dev-zero": "/dev/zero",
        "directory": str(tmp),
        "huge": str(huge),
        "binary": str(binary),
        "missing": str(tmp / "missing.alir"),
    }


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs FIFOs")
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(slot=st.sampled_from(_PATH_SLOTS), kind=st.sampled_from(
    ["fifo", "dev-zero", "directory", "huge", "binary", "missing"]
))
def test_any_hostile_path_ends_in_a_coded_diagnostic(
    slot: list[str],
    kind: str,
    hostile_paths: dict[str, str],
    report_path: str,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import time

    tmp = str(tmp_path_factory.getbasetemp())
    argv = [
        a.replace("{}", hostile_paths[kind]).replace("{report}", report_path).replace("{tmp}", tmp)
        for a in slot
    ]
    start = time.monotonic()
    r = run_cli(capsys, *argv)
    # a FIFO wait or an unbounded read hangs (a slow or loaded machine is not that)
    assert time.monotonic() - start < 300, argv
    assert r.code in (1, 2), (argv, r.code, r.err)
    assert "E0999" not in r.err and "Traceback" not in r.err, (argv, r.err)
    assert re.search(r"^error\[E\d{4}\]", r.err, re.MULTILINE), (argv, r.err)
