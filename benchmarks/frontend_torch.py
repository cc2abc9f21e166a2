"""Benchmark: PyTorch capture + lowering + bounds per model file (validation off).

Each sample runs as a fresh `solar analyze --validate off` process, so the time
includes the interpreter start and the PyTorch import, as a user sees it. The
baseline, run in the same script, is a bare `python -c "import torch"`.

    .venv/bin/python benchmarks/frontend_torch.py [--limit N]

Target (issue: PyTorch frontend): median under 3 s per model file on 2 cores.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _time(cmd: list[str]) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0, help="only the first N samples")
    args = parser.parse_args()
    files = sorted((ROOT / "samples" / "torch").glob("*.py"))
    if args.limit:
        files = files[: args.limit]
    base = statistics.median(_time([sys.executable, "-c", "import torch"])[0] for _ in range(3))
    print(f"baseline `import torch`: {base:.2f} s")
    times, failures = [], []
    for f in files:
        t, rc = _time(
            [
                sys.executable,
                "-m",
                "solar",
                "analyze",
                str(f),
                "--validate",
                "off",
                "-q",
                "--arch",
                "H100_SXM",
            ]
        )
        times.append(t)
        if rc != 0:
            failures.append(f.name)
        print(f"{f.name:<28} {t:6.2f} s  ({t / base:4.1f}x import torch){'  FAILED' if rc else ''}")
    med = statistics.median(times)
    print(
        f"\n{len(files)} files: median {med:.2f} s per file ({med / base:.1f}x the torch import), "
        f"max {max(times):.2f} s; target < 3 s; failures: {failures or 'none'}"
    )


if __name__ == "__main__":
    main()
