"""Benchmark: start-up and per-file overhead of `solar analyze` beyond ``import torch``.

Every measurement is a fresh process, interleaved with its baseline in the same run
(the machine is shared, so only same-run ratios mean anything):

* ``import torch``: the baseline, ``python -c "import torch"``;
* ``import solar``: ``import torch`` plus every module `solar analyze` imports for a
  torch file (pipeline, PyTorch frontend, sympy), without running anything;
* ``analyze``: ``python -m solar analyze FILE --validate off -q`` per sample;
* ``--help``, ``specs list``: commands that must not import torch at all.

    .venv/bin/python benchmarks/startup.py [--repeat 3] [--limit N] [--only NAME ...]

Targets (issue: Speed): median ``analyze`` / ``import torch`` <= 1.3 over the samples;
``analyze`` at most ~0.5 s beyond ``import torch``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_IMPORT_SOLAR = (
    "import torch, solar.pipeline, solar.frontends.pytorch, solar.frontends.pytorch.capture, "
    "solar.cli.analysis"
)


def _time(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, check=False)
    return time.perf_counter() - start


def _analyze(path: Path) -> list[str]:
    return ["-m", "solar", "analyze", str(path), "--validate", "off", "-q", "--arch", "H100_SXM"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="only the first N samples")
    parser.add_argument("--only", nargs="*", default=[], help="sample stems")
    args = parser.parse_args()
    files = sorted((ROOT / "samples" / "torch").glob("*.py"))
    if args.only:
        files = [f for f in files if f.stem in args.only]
    if args.limit:
        files = files[: args.limit]

    fixed = {
        "import torch": ["-c", "import torch"],
        "import solar": ["-c", _IMPORT_SOLAR],
        "--help": ["-m", "solar", "--help"],
        "specs list": ["-m", "solar", "specs", "list"],
    }
    runs: dict[str, list[float]] = {k: [] for k in fixed}
    for _ in range(args.repeat):
        for key, cmd in fixed.items():
            runs[key].append(_time(cmd))
    base = statistics.median(runs["import torch"])
    for key, ts in runs.items():
        med = statistics.median(ts)
        print(f"{key:<16} {med:6.2f} s  ({med / base:4.2f}x import torch)")

    ratios, beyond = [], []
    for f in files:
        # interleave: each file's own baseline, measured right before it
        t_base = _time(["-c", "import torch"])
        t = _time(_analyze(f))
        ratios.append(t / t_base)
        beyond.append(t - t_base)
        print(f"{f.name:<34} {t:6.2f} s  ({t / t_base:4.2f}x import torch, +{t - t_base:5.2f} s)")
    if ratios:
        print(
            f"\n{len(files)} files: median {statistics.median(ratios):.2f}x import torch "
            f"(target <= 1.3x), median +{statistics.median(beyond):.2f} s beyond it "
            f"(target ~0.5 s), max {max(ratios):.2f}x"
        )


if __name__ == "__main__":
    main()
