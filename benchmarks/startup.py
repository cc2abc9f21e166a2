"""Benchmark: start-up and per-file overhead of `solar analyze` beyond ``import torch``.

Every measurement is a fresh process, interleaved with its baseline in the same run
(the machine is shared, so only same-run ratios mean anything):

* ``import torch``: the baseline, ``python -c "import torch"``;
* ``import solar``: ``import torch`` plus every module `solar analyze` imports for a
  torch file (pipeline, PyTorch frontend, sympy), without running anything;
* ``analyze``: ``python -m solar analyze FILE --validate off -q`` per sample;
* ``--help``, ``specs list``: commands that must not import torch at all.

    .venv/bin/python benchmarks/startup.py [--repeat 3] [--limit N] [--every N] [--only NAME ...]

Wall times on a shared machine swing with the other load; the CPU time of each child
(user + system) is reported beside them and is the steadier ratio. The bytecode of
``solar`` is compiled first (``compileall``), as in `benchmarks/per_file.py`: an
installed package has it, and ``PYTHONDONTWRITEBYTECODE`` (set on some machines) would
otherwise make every child compile SOLAR's sources again.

Targets (issue: Speed): median ``analyze`` / ``import torch`` <= 1.3 over the samples;
``analyze`` at most ~0.5 s beyond ``import torch``.
"""

from __future__ import annotations

import argparse
import compileall
import os
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
    """Wall seconds of ``python ARGS``; `_cpu` keeps the child's user + system seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(proc.pid, 0)
    _cpu.append(usage.ru_utime + usage.ru_stime)
    return time.perf_counter() - start


_cpu: list[float] = []


def _analyze(path: Path) -> list[str]:
    return ["-m", "solar", "analyze", str(path), "--validate", "off", "-q", "--arch", "H100_SXM"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="only the first N samples")
    parser.add_argument("--only", nargs="*", default=[], help="sample stems")
    parser.add_argument("--every", type=int, default=1, help="every N-th sample only")
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "solar", quiet=1)
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

    ratios, beyond, cpu_ratios, cpu_beyond = [], [], [], []
    for f in files[:: args.every]:
        # interleave: each file's own baseline, measured right before it
        t_base = _time(["-c", "import torch"])
        t = _time(_analyze(f))
        c_base, c = _cpu[-2], _cpu[-1]
        ratios.append(t / t_base)
        beyond.append(t - t_base)
        cpu_ratios.append(c / c_base)
        cpu_beyond.append(c - c_base)
        print(
            f"{f.name:<34} {t:6.2f} s  ({t / t_base:4.2f}x import torch, +{t - t_base:5.2f} s)"
            f"  CPU {c:5.2f} s ({c / c_base:4.2f}x, +{c - c_base:5.2f} s)"
        )
    if ratios:
        med = statistics.median
        print(
            f"\n{len(ratios)} files: wall median {med(ratios):.2f}x import torch "
            f"(+{med(beyond):.2f} s), max {max(ratios):.2f}x; CPU median "
            f"{med(cpu_ratios):.2f}x (+{med(cpu_beyond):.2f} s), max {max(cpu_ratios):.2f}x; "
            "target <= 1.3x, ~0.5 s beyond"
        )


if __name__ == "__main__":
    main()
