"""Benchmark: KernelBench-size files that used to be pathological (issue: Speed).

Recurrent networks over long sequences (the level-3 GRU/LSTM/RNN problems: 6 layers x
512 steps, uni- and bidirectional), a user-written GRUCell loop (one kernel per step),
and a 3-D transposed convolution, each analysed in a fresh process with validation off
and on. Each run is interleaved with a ``python -c "import torch"`` baseline measured
right before it; wall time, CPU time (user + system, steadier on a shared machine) and
peak RSS of the child are reported.

    PYTHONPATH=. .venv/bin/python benchmarks/large_models.py [--only NAME ...] [--no-validate]

Targets (issue: Speed): no file over 30 s with validation off or 120 s with it on;
peak RSS under 1 GB per file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = Path(__file__).resolve().parent / "models"


def run_child(args: list[str]) -> tuple[float, float, float, int]:
    """(wall s, CPU s, peak RSS MiB, exit code) of ``python ARGS`` in a fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", default=[], help="model stems")
    parser.add_argument("--no-validate", action="store_true", help="validation off only")
    args = parser.parse_args()
    files = sorted(MODELS.glob("*.py"))
    if args.only:
        files = [f for f in files if f.stem in args.only]
    modes = ["off"] if args.no_validate else ["off", "on"]
    print(
        f"{'file':<26} {'validate':>8} {'wall s':>8} {'CPU s':>7} {'torch CPU':>9} "
        f"{'CPU ratio':>9} {'RSS MiB':>8}  rc"
    )
    for f in files:
        for mode in modes:
            _, base_cpu, _, _ = run_child(["-c", "import torch"])
            cmd = ["-m", "solar", "analyze", str(f), "-q", "--arch", "H100_SXM"]
            if mode == "off":
                cmd += ["--validate", "off"]
            wall, cpu, rss, rc = run_child(cmd)
            print(
                f"{f.stem:<26} {mode:>8} {wall:8.1f} {cpu:7.1f} {base_cpu:9.2f} "
                f"{cpu / base_cpu:9.2f} {rss:8.0f}  {rc}"
            )


if __name__ == "__main__":
    main()
