"""Benchmark: the model zoo (tests/zoo/catalogue.py) through SOLAR, one table.

Each model runs in a fresh process (so its peak RSS is its own) through
`tests/zoo/zoo_run.run_zoo_model`: `solar.analyze` on the live module with the zoo's
validation mode, and torch's FlopCounterMode on the same inputs.

    .venv/bin/python benchmarks/zoo.py [--slow] [--validate MODE] [NAME_SUBSTRING ...]

Columns: IR kernels, SOLAR's GFLOP, FlopCounterMode's GFLOP, the same without conv taps
on padding (`zoo_run.unpadded_conv_flop`, SOLAR's floor) and SOLAR's ratio to it, the
coverage, the validation status/strategy, the wall time of the analysis and the
process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ZOO_DIR = ROOT / "tests" / "zoo"


def _one(name: str, validate: str | None) -> None:
    sys.path[:0] = [str(ROOT), str(ZOO_DIR)]
    from catalogue import ZOO
    from zoo_run import run_zoo_model

    model = next(z for z in ZOO if z.name == name)
    row = run_zoo_model(model, validate=validate)
    print(json.dumps(asdict(row)))


def _row(name: str, validate: str | None) -> str:
    cmd = [sys.executable, __file__, "--one", name]
    if validate:
        cmd += ["--validate", validate]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1][:60]
        return f"| {name} | FAILED: {tail} | | | | | | | | |"
    r = json.loads(lines[-1])
    floor = r["counter_floor"]
    ratio = r["solar_flops"] / floor if floor else float("inf")
    cov = "complete" if r["coverage_complete"] else ", ".join(r["uncovered"])
    return (
        f"| {name} | {r['kernels']} | {r['solar_flops'] / 1e9:.4f} | "
        f"{r['counter_flops'] / 1e9:.4f} | {r['counter_floor'] / 1e9:.4f} | {ratio:.3f} | "
        f"{cov} | {r['validation']} | "
        f"{r['wall_s']:.1f} | {r['peak_rss_bytes'] / 2**20:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*", help="only models whose name contains one of these")
    parser.add_argument("--slow", action="store_true", help="include the models marked slow")
    parser.add_argument("--validate", default=None, help="override each model's validation mode")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args.one, args.validate)
        return
    sys.path[:0] = [str(ZOO_DIR)]
    from catalogue import ZOO

    print(
        "| model | kernels | SOLAR GFLOP | FlopCounter GFLOP | unpadded | SOLAR/unpadded "
        "| coverage | validation | wall s | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for z in ZOO:
        if z.slow and not args.slow:
            continue
        if args.names and not any(n in z.name for n in args.names):
            continue
        print(_row(z.name, args.validate), flush=True)


if __name__ == "__main__":
    main()
