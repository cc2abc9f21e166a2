"""`solar batch --engine dask` (issue 18) on a real `LocalCluster` of 2 process workers.

No mocks: the cluster is Dask's own, its workers are nanny-supervised processes, and
the faults are real (a worker SIGKILLed mid-task; a model that segfaults its process;
a model that kills the Dask worker running it, which stands for a lost machine).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cli_helpers import run_cli
from conftest import SAMPLES
from sample_sizes import small_ir_text

from solar.batch import BatchOptions, BatchRow, EngineOptions, FileResult, run_batch

distributed = pytest.importorskip("distributed")

TORCH_MODEL = """
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
"""
# first attempt only: note the pid, then hang until the test kills this task's worker
SLEEPS_ONCE = """
import os, pathlib, time
MARK = pathlib.Path({mark!r})
if not MARK.exists():
    MARK.write_text(str(os.getpid()))
    time.sleep(120)
"""
# every attempt is counted, then the process segfaults
SEGFAULTS = """
import ctypes
with open({count!r}, "a") as fh:
    fh.write("x")
ctypes.string_at(0)
"""
KILLS_ITS_WORKER = """
import os, signal
os.kill(os.getppid(), signal.SIGKILL)
"""


def _comparable(row: BatchRow) -> BatchRow:
    """A row without what differs between two runs of the same file (time, memory)."""
    return replace(row, wall_s=0.0, peak_rss_mib=0.0)


def _ir_files(folder: Path, names: tuple[str, ...]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names:
        path = folder / f"{name}.alir"
        path.write_text(small_ir_text(SAMPLES / "ir" / f"{name}.alir"))
        out.append(path)
    return out


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """Two process workers, one thread each (a task per worker at a time)."""
    import logging

    cl = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit=0,
        silence_logs=logging.ERROR,
    )
    yield cl
    cl.close()


def test_local_and_dask_give_the_same_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "models"
    _ir_files(src, ("matmul", "softmax", "conv2d"))
    (src / "broken.alir").write_text("solar-ir 1\nprogram b\nkernel k { A[ = 1 }\n")
    (src / "helpers.py").write_text("def block(x):\n    return x\n")
    common = ("--arch", "H100_SXM", "--arch", "B200", "--validate", "off")
    local = run_cli(capsys, "batch", str(src), "--out", str(tmp_path / "l"), *common)
    dask = run_cli(
        capsys,
        "batch", str(src), "--out", str(tmp_path / "d"), *common,
        "--engine", "dask", "--workers", "2",
    )  # fmt: skip
    assert local.code == dask.code == 1  # broken.alir
    assert (
        local.out.split(";")[0]
        == dask.out.split(";")[0]
        == ("3/4 ok, 1 failed, 1 skipped (not model files)")
    )
    rows = {}
    for name in ("l", "d"):
        data = json.loads((tmp_path / name / "summary.json").read_text())
        for row in data:
            row["wall_s"] = row["peak_rss_mib"] = 0
            for key in ("report", "log"):  # same layout, different --out
                if row[key]:
                    row[key] = row[key].replace(str(tmp_path / name), "OUT")
        rows[name] = data
    assert rows["l"] == rows["d"]
    assert len(rows["d"]) == 2 * 5
    by_file = {(Path(r["file"]).name, r["arch"]): r for r in rows["d"]}
    # matmul.alir: M=32, N=24, K=16; two FLOPs per multiply-add
    assert by_file["matmul.alir", "H100_SXM"]["flops"] == 2 * 32 * 24 * 16
    assert "E0104" in by_file["broken.alir", "B200"]["error"]
    assert by_file["helpers.py", "B200"]["status"] == "skipped"
    for name in ("l", "d"):  # the reports themselves are byte-identical
        reports = sorted((tmp_path / name).glob("*.json"))
        assert [p.name for p in reports if not p.name.startswith("summary")] == sorted(
            p.name for p in (tmp_path / "l").glob("*.json") if not p.name.startswith("summary")
        )
    for report in (tmp_path / "l").glob("matmul-*.json"):
        assert report.read_bytes() == (tmp_path / "d" / report.name).read_bytes()
    # resume on the dask engine: finished files come back with every field
    again = run_cli(
        capsys,
        "batch", str(src), "--out", str(tmp_path / "d"), *common,
        "--engine", "dask", "--workers", "1", "--resume",
    )  # fmt: skip
    assert again.err.count("ok (resumed)") == 3


def _parent_pid(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1])


@pytest.mark.torch
def test_a_killed_worker_is_retried_and_a_crashing_model_is_not(
    tmp_path: Path, cluster: distributed.LocalCluster
) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "models"
    files = _ir_files(src, ("matmul", "softmax"))
    mark, count = tmp_path / "started", tmp_path / "attempts"
    sleeper = src / "sleeps_once.py"
    sleeper.write_text(SLEEPS_ONCE.format(mark=str(mark)) + TORCH_MODEL)
    crasher = src / "segfaults.py"
    crasher.write_text(SEGFAULTS.format(count=str(count)) + TORCH_MODEL)
    files += [sleeper, crasher]
    engine = EngineOptions(engine="dask", scheduler=cluster.scheduler_address)
    options = BatchOptions(validate="off", timeout_s=100)
    seen: list[FileResult] = []
    box: dict[str, object] = {}

    def run() -> None:
        box["summary"] = run_batch(
            files, options, tmp_path / "out", engine=engine,
            progress=lambda _d, _t, r: seen.append(r),
        )  # fmt: skip

    start = time.monotonic()
    thread = threading.Thread(target=run)
    thread.start()
    while not mark.exists() and time.monotonic() - start < 90:
        time.sleep(0.1)
    assert mark.exists(), "the sleeping model never started"
    time.sleep(0.2)  # the pid is written
    worker_pid = _parent_pid(int(mark.read_text()))
    workers_before = set(cluster.scheduler_info["workers"])
    os.kill(worker_pid, signal.SIGKILL)  # the Dask worker running it, mid-task
    thread.join(150)
    assert not thread.is_alive()
    assert time.monotonic() - start < 100  # the retry did not sleep
    summary = box["summary"]
    by_name = {Path(f.file).name: f for f in summary.files}
    assert [Path(f.file).name for f in seen].count("sleeps_once.py") == 1
    assert sorted(Path(f.file).name for f in seen) == sorted(p.name for p in files)
    assert by_name["sleeps_once.py"].status == "ok"  # retried on a live worker
    assert by_name["matmul.alir"].status == by_name["softmax.alir"].status == "ok"
    crashed = by_name["segfaults.py"]
    assert crashed.status == "crashed"
    assert "killed by SIGSEGV (segmentation fault)" in (crashed.rows[0].error or "")
    assert count.read_text() == "x"  # one attempt: a model's crash is not retried
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert sorted(Path(r["file"]).name for r in rows) == sorted(p.name for p in files)
    reports = [p for p in (tmp_path / "out").glob("*.json") if p.name != "summary.json"]
    assert len(reports) == 3  # every analysed file's report, once
    assert set(cluster.scheduler_info["workers"]) != workers_before  # one was replaced


@pytest.mark.torch
@pytest.mark.slow
def test_a_task_whose_workers_keep_dying_is_recorded_after_the_allowed_failures(
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch")
    import dask

    src = tmp_path / "models"
    files = _ir_files(src, ("matmul",))
    killer = src / "kills_its_worker.py"
    killer.write_text(KILLS_ITS_WORKER + TORCH_MODEL)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        summary = run_batch(
            [*files, killer],
            BatchOptions(validate="off", timeout_s=100),
            tmp_path / "out",
            engine=EngineOptions(engine="dask", workers=2),
        )
    by_name = {Path(f.file).name: f for f in summary.files}
    assert by_name["matmul.alir"].status == "ok"
    lost = by_name["kills_its_worker.py"]
    assert lost.status == "crashed"
    assert "Dask workers running this task died" in (lost.rows[0].error or "")
    assert summary.failed == 1


def test_a_shipped_copy_runs_where_the_file_is_not_and_names_the_original(
    tmp_path: Path,
) -> None:
    from solar.batch.remote import ShippedFile, run_shipped_file

    text = small_ir_text(SAMPLES / "ir" / "matmul.alir")
    shipped = ShippedFile.of(_ir_files(tmp_path / "client", ("matmul",))[0])
    elsewhere = replace(shipped, given="models/matmul.alir", absolute="/nonexistent/matmul.alir")
    options = BatchOptions(validate="off")
    done = run_shipped_file(elsewhere, threading.Event(), options=options)
    assert done.result.status == "ok" and done.result.file == "models/matmul.alir"
    assert done.report is not None
    report = json.loads(done.report)
    assert report["input"]["path"] == "models/matmul.alir"  # not the worker's scratch copy
    assert report["flops"] == 2 * 32 * 24 * 16
    data = text.replace("kernel matmul {", "kernel matmul {{").encode()
    broken = ShippedFile("models/broken.alir", "/nonexistent/broken.alir", data, "0" * 64)
    failed = run_shipped_file(broken, threading.Event(), options=options)
    assert failed.result.status == "error"
    error = failed.result.rows[0].error or ""
    assert "--> models/broken.alir:" in error and "solar-shipped-" not in error


def test_engine_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _ir_files(tmp_path / "m", ("matmul",))
    no_engine = run_cli(capsys, "batch", str(files[0]), "--scheduler", "tcp://127.0.0.1:8786")
    assert no_engine.code == 2 and "E0932" in no_engine.err
    bad = run_cli(capsys, "batch", str(files[0]), "--engine", "spark")
    assert bad.code == 2 and "E0904" in bad.err
    assert not (tmp_path / "solar-reports").exists()


@pytest.mark.torch
def test_stopping_a_dask_batch_kills_the_running_files(
    tmp_path: Path, cluster: distributed.LocalCluster
) -> None:
    pytest.importorskip("torch")
    src = tmp_path / "models"
    mark = tmp_path / "started"
    hangs = src / "hangs.py"
    src.mkdir()
    hangs.write_text(SLEEPS_ONCE.format(mark=str(mark)) + TORCH_MODEL)
    stop = threading.Event()
    box: dict[str, object] = {}

    def run() -> None:
        box["summary"] = run_batch(
            [hangs], BatchOptions(validate="off", timeout_s=100), tmp_path / "out",
            engine=EngineOptions(engine="dask", scheduler=cluster.scheduler_address), stop=stop,
        )  # fmt: skip

    thread = threading.Thread(target=run)
    thread.start()
    start = time.monotonic()
    while not mark.exists() and time.monotonic() - start < 90:
        time.sleep(0.1)
    assert mark.exists()
    time.sleep(0.2)
    child = int(mark.read_text())
    stopped_at = time.monotonic()
    stop.set()  # what SIGINT/SIGTERM do to the client
    thread.join(60)
    assert not thread.is_alive()
    # the worker's task saw the Event (the model sleeps far longer; 45 s allow for load)
    assert time.monotonic() - stopped_at < 45
    (result,) = box["summary"].files  # type: ignore[attr-defined]
    assert result.status == "cancelled"
    assert not Path(f"/proc/{child}").exists()  # the model's process is gone
