"""What SOLAR writes (issue 15): atomic files at exactly the named path, clean stdout.

Every output goes through `solar.files.atomic_output` (temp file in the same
directory, then `os.replace`), so a reader never sees an empty or half-written file; a
bad ``-o`` is a coded diagnostic (E0940 a directory, E0941 unwritable) before any work;
``--format json`` stays parseable when the model prints.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import CliResult, run_cli
from sample_sizes import small_ir_path

from solar.diagnostics import UsageError
from solar.files import atomic_output, write_atomic

MATMUL = str(small_ir_path("matmul"))  # the sample at its small test sizes


def assert_diagnostic(r: CliResult, code: str, exit_code: int) -> None:
    """``r`` ended with ``error[code]`` and ``exit_code``, without a traceback."""
    assert r.code == exit_code, (r.out, r.err)
    assert re.search(rf"^error\[{code}\]", r.err, re.MULTILINE), r.err
    assert "Traceback" not in r.err and "E0999" not in r.err, r.err


@pytest.fixture
def fake_calibration(monkeypatch: pytest.MonkeyPatch) -> None:
    """`solar calibrate` without the 10 s measurement."""
    import solar.hw

    spec = solar.hw.load_hardware_spec("H100_SXM")
    monkeypatch.setattr(solar.hw, "calibrate_machine", lambda **_: spec)


# ------------------------------------------------------------------------ atomicity
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")

    def half_write() -> None:
        with atomic_output(target) as fh:
            fh.write(b"half")
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        half_write()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_reader_never_sees_an_empty_or_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    payloads = [json.dumps({"n": i, "pad": "x" * 200_000}) for i in range(2)]
    write_atomic(target, payloads[0])
    bad: list[int] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            text = target.read_text()
            if text not in payloads:
                bad.append(len(text))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(40):
            write_atomic(target, payloads[i % 2])
    finally:
        done.set()
        reader.join()
    assert bad == []


def test_modes_follow_the_umask_or_the_replaced_file(tmp_path: Path) -> None:
    fresh = write_atomic(tmp_path / "new.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    kept.chmod(0o640)
    write_atomic(kept, "new")
    assert kept.stat().st_mode & 0o777 == 0o640 and kept.read_text() == "new"


def test_a_symlink_keeps_pointing_at_the_new_file(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_e0941() -> None:
    with pytest.raises(UsageError, match="cannot write /dev/full: No space left") as err:
        write_atomic(Path("/dev/full"), "x")
    assert err.value.code == "E0941"


@pytest.fixture
def renamed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names `os.replace` moved into place (how `atomic_output` finishes)."""
    import solar.files

    names: list[str] = []
    real_replace = os.replace

    def replace(src: str | Path, dst: str | Path) -> None:
        names.append(Path(dst).name)
        real_replace(src, dst)

    monkeypatch.setattr(solar.files.os, "replace", replace)
    return names


def test_every_output_is_renamed_into_place(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    renamed: list[str],
    fake_calibration: None,
) -> None:
    report = tmp_path / "r.json"
    r = run_cli(capsys, "analyze", MATMUL, "--measured-ms", "1", "-o", str(report),
                "--save-ir", str(tmp_path / "m.alir"), "-q")  # fmt: skip
    assert r.code == 0, r.err
    r = run_cli(capsys, "gate", str(report), "--junit", str(tmp_path / "j.xml"),
                "--summary", str(tmp_path / "s.md"))  # fmt: skip
    assert r.code == 0, r.err
    assert run_cli(capsys, "calibrate", "-o", str(tmp_path / "box.yaml")).code == 0
    assert run_cli(capsys, "ir", "run", MATMUL, "-o", str(tmp_path / "o.npz")).code == 0
    # plots: test_dollars_in_names_are_drawn_literally
    assert sorted(renamed) == sorted(["r.json", "m.alir", "s.md", "j.xml", "box.yaml", "o.npz"])
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# ------------------------------------------------------------------------ paths
def test_ir_run_writes_exactly_the_named_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "outputs.bin"
    r = run_cli(capsys, "ir", "run", MATMUL, "-o", str(target))
    assert r.code == 0, r.err
    assert f"wrote {target}" in r.err
    assert [p.name for p in tmp_path.iterdir()] == ["outputs.bin"]
    with np.load(target) as data:
        assert data["C"].shape == (32, 24)


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", MATMUL, "-o", "{dir}"],
        ["analyze", MATMUL, "--save-ir", "{dir}"],
        ["ir", "run", MATMUL, "-o", "{dir}"],
        ["calibrate", "-o", "{dir}"],
        ["plot", "{report}", "-o", "{dir}/sub.png"],
    ],
    ids=["analyze", "save-ir", "ir-run", "calibrate", "plot"],
)
def test_output_into_a_directory_is_e0940(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_calibration: None, args: list[str]
) -> None:
    (tmp_path / "sub.png").mkdir()
    report = tmp_path / "r.json"
    if args[0] == "plot":
        assert run_cli(capsys, "analyze", MATMUL, "-o", str(report), "-q").code == 0
    argv = [a.format(dir=tmp_path, report=report) for a in args]
    assert_diagnostic(run_cli(capsys, *argv), "E0940", 2)


def test_calibrate_into_a_missing_directory_creates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fake_calibration: None
) -> None:
    target = tmp_path / "new" / "box.yaml"
    r = run_cli(capsys, "calibrate", "-o", str(target))
    assert r.code == 0, r.err
    assert "dram_bandwidth_bytes_per_s" in target.read_text()


def test_calibrate_under_a_file_fails_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import solar.hw

    def never(**_: object) -> None:
        raise AssertionError("measured before checking -o")

    monkeypatch.setattr(solar.hw, "calibrate_machine", never)
    (tmp_path / "file").write_text("")
    r = run_cli(capsys, "calibrate", "-o", str(tmp_path / "file" / "box.yaml"))
    assert_diagnostic(r, "E0941", 2)


# ------------------------------------------------------------------------ what reaches stdout
@pytest.mark.slow
def test_dollars_in_names_are_drawn_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], renamed: list[str]
) -> None:
    pytest.importorskip("matplotlib")
    report = tmp_path / "r.json"
    assert run_cli(capsys, "analyze", MATMUL, "-o", str(report), "-q").code == 0
    data = json.loads(report.read_text())
    data["program"] = r"p$\alpha_{"
    for arch in data["archs"]:
        for k in arch["kernels"]:
            k["name"] = r"x$\frac{a}{$"
    report.write_text(json.dumps(data))
    png = tmp_path / "p.png"
    r = run_cli(capsys, "plot", str(report), "-o", str(png))
    assert r.code == 0, r.err
    assert png.stat().st_size > 1000
    assert renamed[-1] == "p.png"  # written atomically, like every output


NOISY = """
import sys
import torch
from torch import nn

print("import says hi")
N = 8


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        print("__init__ says hi")
        self.lin = nn.Linear(N, N)

    def forward(self, x):
        print("forward says hi")
        sys.stdout.write("raw write\\n")
        return self.lin(x)


def get_inputs():
    print("get_inputs says hi")
    return [torch.randn(2, N)]


def get_init_inputs():
    return []
"""


@pytest.mark.torch
@pytest.mark.slow
def test_model_prints_go_to_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    model = tmp_path / "noisy.py"
    model.write_text(NOISY)
    r = run_cli(capsys, "analyze", str(model), "--format", "json", "--measure", "-q")
    assert r.code == 0, r.err
    report = json.loads(r.out)  # nothing but the report on stdout
    assert report["measurement"]["source"] == "measured"
    for line in ("import says hi", "__init__ says hi", "forward says hi", "raw write"):
        assert line in r.err
