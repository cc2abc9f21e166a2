"""Benchmark: every sample analysed in a fresh process, validation off and on (issue 17).

For each model file of ``samples/torch`` and ``samples/jax`` (or the files given), in
this order: the framework import alone (``python -c "import torch"``, or ``jax``), then
``solar analyze FILE --validate off``, then ``solar analyze FILE`` (validation ``auto``).
Each child's wall time, CPU time (user + system, the steadier figure on a shared
machine) and peak RSS come from ``wait4``. The summary gives the targets' figures:

* median ``--validate off`` / import ratio (wall and CPU), target <= 1.3x;
* the slowest file with validation off (< 30 s) and on (< 120 s);
* the largest peak RSS of one file (< 1 GiB);
* a validated batch of 250 such files on 2 cores, extrapolated from the mean CPU time
  per validated file (CPU-bound work on 2 cores takes CPU / 2 of wall at best; the
  wall-time extrapolation is printed beside it), target < 45 min.

    .venv/bin/python benchmarks/per_file.py [--every N] [--no-validate] [--csv OUT] [FILE ...]

The bytecode of ``solar`` is compiled first (``compileall``): an installed package has
it, and ``PYTHONDONTWRITEBYTECODE`` (set on some machines) would otherwise make every
child compile SOLAR's sources again.
"""

from __future__ import annotations

import argparse
import compileall
import csv
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BATCH_FILES = 250
CORES = 2


@dataclass(frozen=True)
class Child:
    """One child process: wall s, CPU s, peak RSS MiB, exit code."""

    wall_s: float
    cpu_s: float
    rss_mib: float
    rc: int


def run_child(args: list[str]) -> Child:
    """Run ``python ARGS`` in ``ROOT`` and measure it."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Child(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def _analyze(path: Path, validate: bool) -> list[str]:
    cmd = ["-m", "solar", "analyze", str(path), "-q", "--arch", "H100_SXM"]
    return cmd if validate else [*cmd, "--validate", "off"]


def _files(given: list[str]) -> list[Path]:
    if given:
        return [Path(f).resolve() for f in given]
    return sorted((ROOT / "samples" / "torch").glob("*.py")) + sorted(
        (ROOT / "samples" / "jax").glob("*.py")
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*")
    parser.add_argument("--every", type=int, default=1, help="every N-th file only")
    parser.add_argument("--no-validate", action="store_true")
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args()
    compileall.compile_dir(ROOT / "solar", quiet=1)
    files = _files(args.files)[:: args.every]
    rows: list[dict[str, object]] = []
    print(
        f"{'file':<34} {'base s':>6} {'off s':>6} {'off CPU':>7} {'ratio':>5} {'CPU r':>5} "
        f"{'on s':>6} {'on CPU':>6} {'RSS MiB':>7}  rc"
    )
    for f in files:
        framework = "jax" if f.parent.name == "jax" else "torch"
        base = run_child(["-c", f"import {framework}"])
        off = run_child(_analyze(f, False))
        on = None if args.no_validate else run_child(_analyze(f, True))
        row: dict[str, object] = {
            "file": f"{f.parent.name}/{f.name}",
            "framework": framework,
            "base_wall_s": base.wall_s,
            "base_cpu_s": base.cpu_s,
            "off_wall_s": off.wall_s,
            "off_cpu_s": off.cpu_s,
            "off_rss_mib": off.rss_mib,
            "off_rc": off.rc,
        }
        if on is not None:
            row |= {
                "on_wall_s": on.wall_s,
                "on_cpu_s": on.cpu_s,
                "on_rss_mib": on.rss_mib,
                "on_rc": on.rc,
            }
        rows.append(row)
        on_txt = f"{on.wall_s:6.1f} {on.cpu_s:6.1f}" if on is not None else f"{'-':>6} {'-':>6}"
        rss = max(off.rss_mib, on.rss_mib if on is not None else 0.0)
        print(
            f"{row['file']!s:<34} {base.wall_s:6.2f} {off.wall_s:6.2f} {off.cpu_s:7.2f} "
            f"{off.wall_s / base.wall_s:5.2f} {off.cpu_s / base.cpu_s:5.2f} {on_txt} "
            f"{rss:7.0f}  {off.rc}/{on.rc if on is not None else '-'}",
            flush=True,
        )
    if args.csv is not None:
        with args.csv.open("w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    _summary(rows)


def _summary(rows: list[dict[str, object]]) -> None:
    def col(key: str, which: list[dict[str, object]] | None = None) -> list[float]:
        return [float(r[key]) for r in (rows if which is None else which) if key in r]  # type: ignore[arg-type]

    med = statistics.median
    for fw in ("torch", "jax"):
        sub = [r for r in rows if r["framework"] == fw]
        if not sub:
            continue
        wall = [a / b for a, b in zip(col("off_wall_s", sub), col("base_wall_s", sub), strict=True)]
        cpu = [a / b for a, b in zip(col("off_cpu_s", sub), col("base_cpu_s", sub), strict=True)]
        print(
            f"\n{fw}: {len(sub)} files, --validate off / import {fw}: wall median "
            f"{med(wall):.2f}x (import {med(col('base_wall_s', sub)):.2f} s, analyze "
            f"{med(col('off_wall_s', sub)):.2f} s), CPU median {med(cpu):.2f}x"
        )
    worst_off = max(rows, key=lambda r: float(r["off_wall_s"]))  # type: ignore[arg-type]
    print(
        f"slowest, validation off: {worst_off['file']} {float(worst_off['off_wall_s']):.1f} s "  # type: ignore[arg-type]
        "(target < 30 s)"
    )
    rss = max(col("off_rss_mib") + col("on_rss_mib"))
    print(f"largest peak RSS of one file: {rss:.0f} MiB (target < 1024 MiB)")
    bad = [r["file"] for r in rows if r["off_rc"] not in (0, 1) or r.get("on_rc", 0) not in (0, 1)]
    print(f"exit codes other than 0/1: {bad or 'none'}")
    if "on_wall_s" not in rows[0]:
        return
    worst_on = max(rows, key=lambda r: float(r["on_wall_s"]))  # type: ignore[arg-type]
    print(
        f"slowest, validation on: {worst_on['file']} {float(worst_on['on_wall_s']):.1f} s "  # type: ignore[arg-type]
        "(target < 120 s)"
    )
    n = len(rows)
    cpu_min = BATCH_FILES * statistics.fmean(col("on_cpu_s")) / CORES / 60
    wall_min = BATCH_FILES * statistics.fmean(col("on_wall_s")) / CORES / 60
    print(
        f"validated batch of {BATCH_FILES} files on {CORES} cores, from these {n}: "
        f"{cpu_min:.1f} min by CPU time, {wall_min:.1f} min by wall time "
        "(target < 45 min)"
    )


if __name__ == "__main__":
    main()
