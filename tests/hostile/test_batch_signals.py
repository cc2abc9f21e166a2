"""`solar batch` under SIGTERM, SIGINT and SIGKILL: no orphans, a summary of what finished.

The batch runs as a real process (``python -m solar batch``, three workers) over two IR
files, which finish, and a model file that starts a ``sleep 300`` grandchild and then
sleeps itself. SIGTERM (once the model runs) and SIGINT (once the IR files are done)
must end the batch within seconds with exit status 128+N, the summaries listing the
finished files as ``ok`` and the running one as ``cancelled``, and no process left:
neither the per-file workers nor what they started. SIGKILL cannot be caught; the
workers must still die with the batch (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SAMPLES

pytestmark = [
    pytest.mark.torch,
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc"),
]
pytest.importorskip("torch")

SLEEPER = """\
import os
import subprocess
import time
from pathlib import Path

_child = subprocess.Popen(["sleep", "300"])
Path({pids!r}, f"{{os.getpid()}}-{{_child.pid}}").write_text("")
time.sleep(300)


def get_inputs():
    return []


class Model:
    pass
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
    return out


def _wait_for(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["SIGTERM", "SIGINT", "SIGKILL"]
)
def test_a_stopped_batch_leaves_no_process_and_a_summary(tmp_path: Path, sig: int) -> None:
    src, out, pids = tmp_path / "models", tmp_path / "out", tmp_path / "pids"
    src.mkdir()
    pids.mkdir()
    (src / "a_sleeper.py").write_text(SLEEPER.format(pids=str(pids)))
    for name in ("b_matmul", "c_softmax"):
        ir = SAMPLES / "ir" / f"{name.split('_', 1)[1]}.alir"
        (src / f"{name}.alir").write_text(ir.read_text())
    log = (tmp_path / "batch.out").open("wb")
    batch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "solar",
            "batch",
            str(src),
            "--out",
            str(out),
            "--workers",
            "3",
            "--validate",
            "off",
            "--timeout",
            "600",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    workers: list[int] = []
    try:
        assert _wait_for(lambda: len(_children(batch.pid)) == 3, 60), "workers never started"
        workers = _children(batch.pid)
        if sig == signal.SIGTERM:  # the model runs and has started its grandchild
            assert _wait_for(lambda: any(pids.iterdir()), 120), "the model never ran"
        if sig != signal.SIGKILL:  # the IR files are done
            assert _wait_for(lambda: len(list(out.glob("rows/*.json"))) == 2, 120)
        os.kill(batch.pid, sig)
        code = batch.wait(timeout=30)
    finally:
        if batch.poll() is None:
            os.killpg(batch.pid, signal.SIGKILL)
            batch.wait()
        log.close()
    output = (tmp_path / "batch.out").read_text()
    assert _wait_for(lambda: not any(_alive(pid) for pid in workers), 10), "orphaned workers"
    grandchildren = [int(p.name.split("-")[1]) for p in pids.iterdir()]
    if sig == signal.SIGKILL:
        for pid in grandchildren:  # reparented to init: not the batch's to reap
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return
    assert _wait_for(lambda: not any(_alive(p) for p in grandchildren), 10), "orphans"
    assert code == 128 + sig, output
    assert f"stopped by {signal.Signals(sig).name}" in output
    assert "2/3 ok, 0 failed, 1 cancelled" in output
    assert "Traceback" not in output
    rows = {Path(r["file"]).name: r for r in json.loads((out / "summary.json").read_text())}
    assert rows["a_sleeper.py"]["status"] == "cancelled"
    assert rows["b_matmul.alir"]["status"] == "ok"
    assert rows["c_softmax.alir"]["status"] == "ok"


def test_ctrl_c_on_a_dask_batch_prints_no_worker_tracebacks(tmp_path: Path) -> None:
    """Issue 30 item 8: Ctrl-C reaches the whole foreground process group, the Dask
    workers too; they printed ``CancelledError`` and ``KeyboardInterrupt`` tracebacks
    while the client stopped them. The batch runs in a group of its own, which gets the
    SIGINT a terminal would send."""
    pytest.importorskip("distributed")
    started = tmp_path / "started"
    model = tmp_path / "in" / "slow.py"
    model.parent.mkdir()
    model.write_text(
        "import time, torch\nN = 8\n\nclass Model(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        f"        open({str(started)!r}, 'w').close()\n"
        "        time.sleep(300)\n        return x\n\n"
        "def get_inputs():\n    return [torch.randn(N)]\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "solar", "batch", str(model.parent), "--engine", "dask",
         "--workers", "2", "--out", str(tmp_path / "out")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert started.exists(), proc.stderr.read() if proc.stderr else ""
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "stopped by SIGINT" in err
    assert "Traceback" not in err and "CancelledError" not in err, err
