"""Benchmark: a 1,000-point size sweep of a transformer block against one analysis.

Both run as fresh processes, interleaved in the same run (the machine is shared, so
only same-run ratios mean anything):

* ``analyze``: ``python -m solar analyze samples/ir/transformer_block.alir -q``;
* ``sweep``: ``python -m solar sweep`` of the same file over B x T x H = 10 x 10 x 10
  bindings (one capture, 999 symbolic re-bindings), with one JSON report per point;
* ``sweep --no-reports``: the same, the table only.

Wall seconds and the CPU seconds (user + system of the process and its children) are
reported per run, and the median ratios sweep / analyze. The sweep's own record of
its capture and binding seconds comes from ``sweep.json``.

    .venv/bin/python benchmarks/sweep.py [--repeat 3] [--archs H100_SXM]

Target (issue 18): the sweep finishes in a time dominated by one capture, i.e.
sweep / analyze < 2 (the 1,000 bindings cost less than the one capture).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCK = "samples/ir/transformer_block.alir"
AXES = ("B=1,2,4,8,16,32,64,128,256,512", "T=256..2560:256", "H=4..40:4")


def _run(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of ``python -m solar ARGS``."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "solar", *args], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def _sweep(out: Path, archs: list[str], *extra: str) -> tuple[float, float, dict[str, float]]:
    args = ["sweep", BLOCK, *(a for s in AXES for a in ("--set", s)),
            *(a for n in archs for a in ("--arch", n)), "--out", str(out), *extra]  # fmt: skip
    wall, cpu = _run(args)
    data = json.loads((out / "sweep.json").read_text())
    capture = data["captures"][0]
    assert data["points"] == 1000 and capture["served"] == 1000, "not one capture for all"
    return wall, cpu, {"capture_s": capture["capture_s"], "bind_s": capture["bind_s"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--archs", nargs="+", default=["H100_SXM"])
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"analyze": [], "sweep": [], "no-reports": []}
    inner: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            results["analyze"].append(
                _run(["analyze", BLOCK, "-q", *(a for n in args.archs for a in ("--arch", n))])
            )
            wall, cpu, rec = _sweep(Path(tmp) / f"s{k}", args.archs)
            results["sweep"].append((wall, cpu))
            inner.append(rec)
            wall, cpu, _ = _sweep(Path(tmp) / f"n{k}", args.archs, "--no-reports")
            results["no-reports"].append((wall, cpu))
    med = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
           for name, runs in results.items()}  # fmt: skip
    print(
        f"{BLOCK}, {len(args.archs)} arch(s), median of {args.repeat}; load "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    for name, (wall, cpu) in med.items():
        ratio = (
            ""
            if name == "analyze"
            else (
                f"  ratio/analyze: wall {wall / med['analyze'][0]:.2f}x, "
                f"CPU {cpu / med['analyze'][1]:.2f}x"
            )
        )
        print(f"{name:>11}: wall {wall:6.2f} s  CPU {cpu:6.2f} s{ratio}")
    capture = statistics.median(r["capture_s"] for r in inner)
    bind = statistics.median(r["bind_s"] for r in inner)
    print(
        f"inside the sweep: capture {capture:.2f} s, 1,000 bindings with reports "
        f"{bind:.2f} s ({bind:.3f} ms/point)"
    )


if __name__ == "__main__":
    main()
