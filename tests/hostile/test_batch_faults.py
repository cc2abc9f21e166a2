"""`solar batch`: a file that crashes, hangs or eats memory is its own row (issue 15).

One batch over good IR files and hostile model files, each failing in its own way at
import time; every good file must land, every bad one must be recorded with its cause,
and the batch must finish within its limits. Then a resumed run redoes only the failed
files' analyses (checked on a cheap broken IR file).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from sample_sizes import small_ir_text

from solar.batch import BatchOptions, FileResult, expand_sources, run_batch

HOSTILE = {
    "segfault": "import ctypes\nctypes.string_at(0)\n",
    "os_exit": "import os\nos._exit(7)\n",
    "sys_exit": "import sys\nsys.exit(3)\n",
    "oom_killed": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "allocates_4gib": "hog = bytearray(4 << 30)\n",
    "maps_800mb": (
        "import mmap, time\n"
        "fh = open(SPARSE, 'rb')  # a sparse 800 MiB file: resident once read, no RLIMIT_DATA\n"
        "m = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)\n"
        "total = sum(m[i] for i in range(0, len(m), 4096))\n"
        "time.sleep(120)\n"
    ),
}
LOOPS_FOREVER = "while True:\n    pass\n"
ENTRY_POINTS = "\n\ndef get_inputs():\n    return []\n\n\nclass Model:\n    pass\n"

EXPECTED = {
    "segfault.py": ("crashed", "killed by SIGSEGV (segmentation fault); log: Fatal Python error"),
    "os_exit.py": ("crashed", "exited with status 7 before finishing"),
    "sys_exit.py": ("crashed", "exit"),  # or a coded diagnostic (status "error") naming it
    "oom_killed.py": ("crashed", "killed by SIGKILL (the kernel's OOM killer"),
    "allocates_4gib.py": ("memory-limit", "MemoryError"),
    "maps_800mb.py": ("memory-limit", "resident memory over the --max-rss of 700 MiB"),
    "helpers.py": ("skipped", "not a model file"),
    "matmul.alir": ("ok", None),
    "softmax.alir": ("ok", None),
    "conv2d.alir": ("ok", None),
}


@pytest.mark.torch
@pytest.mark.slow
def test_every_fault_is_recorded_and_every_good_file_lands(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "models"
    src.mkdir()
    sparse = tmp_path / "sparse.bin"
    with sparse.open("wb") as fh:
        fh.truncate(800 << 20)
    for name, body in HOSTILE.items():
        (src / f"{name}.py").write_text(f"SPARSE = {str(sparse)!r}\n" + body + ENTRY_POINTS)
    (src / "helpers.py").write_text("def block(x):\n    return x\n")
    for name in ("matmul", "softmax", "conv2d"):
        (src / f"{name}.alir").write_text(small_ir_text(SAMPLES / "ir" / f"{name}.alir"))
    options = BatchOptions(
        archs=("H100_SXM", "B200"), validate="off", timeout_s=120, max_rss_mib=700
    )
    seen: list[FileResult] = []
    start = time.monotonic()
    summary = run_batch(
        expand_sources(str(src)),
        options,
        tmp_path / "out",
        workers=3,
        progress=lambda _d, _t, r: seen.append(r),
    )
    assert time.monotonic() - start < 150
    assert len(seen) == len(EXPECTED)
    by_name = {Path(f.file).name: f for f in summary.files}
    assert set(by_name) == set(EXPECTED)
    for name, (status, needle) in EXPECTED.items():
        result = by_name[name]
        allowed = {status, "error"} if name == "sys_exit.py" else {status}
        assert result.status in allowed, (name, result.status, result.rows[0].error)
        assert [r.arch for r in result.rows] == ["H100_SXM", "B200"]
        if needle is not None:
            assert (
                needle in (result.rows[0].error or "").lower()
                if name == "sys_exit.py"
                else (needle in (result.rows[0].error or ""))
            ), (name, result.rows[0].error)
        if status == "ok":
            assert Path(result.rows[0].report or "").is_file()
            assert result.rows[0].bounds_s
    assert "segfault.py:3" in (by_name["segfault.py"].rows[0].error or "")
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(rows) == 2 * len(EXPECTED)
    assert summary.failed == 6


@pytest.mark.torch
def test_a_file_that_never_finishes_stops_at_the_timeout(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "models"
    src.mkdir()
    (src / "loops_forever.py").write_text(LOOPS_FOREVER + ENTRY_POINTS)
    (src / "matmul.alir").write_text(small_ir_text(SAMPLES / "ir" / "matmul.alir"))
    start = time.monotonic()
    summary = run_batch(
        expand_sources(str(src)),
        BatchOptions(validate="off", timeout_s=8),
        tmp_path / "out",
        workers=2,
    )
    assert time.monotonic() - start < 8 + 10
    by_name = {Path(f.file).name: f for f in summary.files}
    assert by_name["matmul.alir"].status == "ok"
    looped = by_name["loops_forever.py"]
    assert looped.status == "timeout"
    assert looped.rows[0].error == "stopped at the --timeout of 8 s"
    assert 8 <= looped.rows[0].wall_s < 8 + 2


def test_a_resumed_run_redoes_failed_files_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "models"
    src.mkdir()
    (src / "matmul.alir").write_text(small_ir_text(SAMPLES / "ir" / "matmul.alir"))
    (src / "broken.alir").write_text("solar-ir 1\nprogram b\nkernel k { A[ = 1 }\n")
    out = tmp_path / "out"
    first = run_cli(capsys, "batch", str(src), "--out", str(out), "--validate", "off")
    assert first.code == 1
    assert "1/2 ok, 1 failed" in first.out
    again = run_cli(capsys, "batch", str(src), "--out", str(out), "--validate", "off", "--resume")
    assert again.code == 1
    assert "ok (resumed)" in again.err
    assert "error " in again.err and "E0104" in again.err  # redone, not resumed
    rows = {Path(r["file"]).name: r for r in json.loads((out / "summary.json").read_text())}
    assert rows["matmul.alir"]["resumed"] is True
    assert rows["broken.alir"]["resumed"] is False
