"""Benchmark: `solar batch` over every bundled sample, 2 files at a time.

Reports files per minute and the largest peak resident memory of one file's process
(from the per-file rows), against a baseline in the same script: the same files
analysed one at a time. Every file runs in a fresh process (Note [Batch isolation]).

    .venv/bin/python benchmarks/batch.py [--workers 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from solar.batch import BatchOptions, run_batch

ROOT = Path(__file__).resolve().parents[1]


def _files() -> list[Path]:
    out: list[Path] = []
    for sub, pattern in (("ir", "*.alir"), ("torch", "*.py"), ("jax", "*.py")):
        out += sorted((ROOT / "samples" / sub).glob(pattern))
    return out


def _run(files: list[Path], workers: int) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = run_batch(files, BatchOptions(), Path(tmp), workers=workers)
        wall = time.perf_counter() - start
    peak = max((r.peak_rss_mib for r in summary.rows), default=0.0)
    return wall, peak, summary.failed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    files = _files()
    if args.limit:
        files = files[: args.limit]
    base_wall, base_peak, _ = _run(files, 1)
    wall, peak, failed = _run(files, args.workers)
    n = len(files)
    print(f"{n} files")
    print(f"1 worker : {base_wall:7.1f} s  {60 * n / base_wall:6.1f} files/min  "
          f"peak RSS/file {base_peak:6.0f} MiB")
    print(f"{args.workers} workers: {wall:7.1f} s  {60 * n / wall:6.1f} files/min  "
          f"peak RSS/file {peak:6.0f} MiB  (speed-up {base_wall / wall:.2f}x; "
          f"{failed} failed)")


if __name__ == "__main__":
    main()
