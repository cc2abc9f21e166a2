"""Benchmark: the model zoo (tests/zoo/catalogue.py) through SOLAR, one table.

Each model runs in a fresh process (so its peak RSS is its own) through
`tests/zoo/zoo_run.run_zoo_model`: `solar.analyze` on the live module with the zoo's
validation mode, and torch's FlopCounterMode on the same inputs.

    .venv/bin/python benchmarks/zoo.py [--slow] [--validate MODE] [NAME_SUBSTRING ...]
    .venv/bin/python benchmarks/zoo.py --train [--optimizer adamw] [--slow] [NAME ...]
    .venv/bin/python benchmarks/zoo.py --train --samples

Columns: IR kernels, SOLAR's GFLOP, FlopCounterMode's GFLOP, the same without conv taps
on padding or cropped by a transposed convolution (`zoo_run.unpadded_conv_flop`, SOLAR's
floor) and SOLAR's ratio to it, the coverage, the validation status/strategy, the wall
time of the analysis and the process's peak RSS. The JAX programs (tests/zoo/jax_zoo.py:
equinox, flax.nnx, MJX, brax) run as ``solar analyze FILE``; their counter is XLA's
unoptimised cost analysis, which has no floor ("-").

``--train`` bounds one training step of each model instead (`zoo_run.run_zoo_train`:
batch 2, default loss, AdamW unless ``--optimizer``, H100_SXM, cold cache) and prints
the phases' FLOPs and fused bounds, the saved activations, coverage and validation;
``--train --samples`` does the same for ``samples/torch/train_*.py`` (each file's own
loss and optimizer, `zoo_run.run_sample_train`).
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


def _one(name: str, validate: str | None, optimizer: str | None) -> None:
    sys.path[:0] = [str(ROOT), str(ZOO_DIR)]
    from catalogue import ZOO
    from jax_zoo import JAX_ZOO, run_jax_program
    from zoo_run import run_sample_train, run_zoo_model, run_zoo_train

    if name.endswith(".py"):  # a training sample (--train --samples)
        print(json.dumps(asdict(run_sample_train(name))))
        return
    jax_entry = next((e for e in JAX_ZOO if e.name == name), None)
    if jax_entry is not None:  # a JAX program: XLA's cost analysis is the counter
        print(json.dumps(asdict(run_jax_program(jax_entry, validate=validate or "auto"))))
        return
    model = next(z for z in ZOO if z.name == name)
    if optimizer is not None:
        print(json.dumps(asdict(run_zoo_train(model, optimizer=optimizer, validate=validate))))
        return
    row = run_zoo_model(model, validate=validate)
    print(json.dumps(asdict(row)))


def _run(name: str, validate: str | None, optimizer: str | None) -> dict[str, object] | str:
    """The row's fields from a fresh process, or the last line of its error."""
    cmd = [sys.executable, __file__, "--one", name]
    if validate:
        cmd += ["--validate", validate]
    if optimizer:
        cmd += ["--train", "--optimizer", optimizer]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return (proc.stderr.strip().splitlines() or ["?"])[-1][:80]
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def _si(x: float, unit: str) -> str:
    """``x`` with an SI prefix: ``_si(1.5e6, "FLOP") == "1.5 MFLOP"``."""
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _ns(t: float) -> str:
    return f"{t * 1e9:.1f} ns" if t < 1e-6 else f"{t * 1e6:.2f} us"


TRAIN_HEADER = (
    "| model | forward FLOPs / bound | backward | optimizer | step | saved activations "
    "| coverage | validation | wall s |\n|---|---|---|---|---|---|---|---|---|"
)


def _train_row(name: str, validate: str | None, optimizer: str) -> str:
    r = _run(name, validate, optimizer)
    if isinstance(r, str):
        return f"| {name} | FAILED: {r} | | | | | | | |"
    flops, times = r["phase_flops"], r["phase_time_s"]
    cells = [f"{_si(f, 'FLOP')} / {_ns(t)}" for f, t in zip(flops, times, strict=True)]  # type: ignore[call-overload]
    cells.append(f"{_si(r['step_flops'], 'FLOP')} / {_ns(r['step_time_s'])}")  # type: ignore[arg-type]
    cov = "complete" if r["coverage_complete"] else ", ".join(r["uncovered"])  # type: ignore[arg-type]
    return (
        f"| {name} | {' | '.join(cells)} | {_si(r['saved_activation_bytes'], 'B')} "  # type: ignore[arg-type]
        f"| {cov} | {r['validation']} | {r['wall_s']:.1f} |"
    )


def _row(name: str, validate: str | None) -> str:
    r = _run(name, validate, None)
    if isinstance(r, str):
        return f"| {name} | FAILED: {r} | | | | | | | | |"
    floor = r["counter_floor"]
    ratio = f"{r['solar_flops'] / floor:.3f}" if floor else "-"
    cov = "complete" if r["coverage_complete"] else ", ".join(r["uncovered"])
    return (
        f"| {name} | {r['kernels']} | {_si(r['solar_flops'], 'FLOP')} | "  # type: ignore[arg-type]
        f"{_si(r['counter_flops'], 'FLOP')} | {_si(r['counter_floor'], 'FLOP')} | {ratio} | "  # type: ignore[arg-type]
        f"{cov} | {r['validation']} | "
        f"{r['wall_s']:.1f} | {r['peak_rss_bytes'] / 2**20:.0f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("names", nargs="*", help="only models whose name contains one of these")
    parser.add_argument("--slow", action="store_true", help="include the models marked slow")
    parser.add_argument("--validate", default=None, help="override each model's validation mode")
    parser.add_argument("--train", action="store_true", help="bound one training step")
    parser.add_argument("--optimizer", default="adamw", help="the step's update (--train)")
    parser.add_argument(
        "--samples",
        action="store_true",
        help="--train: the PyTorch training samples (their own loss and optimizer) instead",
    )
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    optimizer = args.optimizer if args.train else None
    if args.one:
        _one(args.one, args.validate, optimizer)
        return
    sys.path[:0] = [str(ROOT), str(ZOO_DIR)]
    from catalogue import ZOO
    from jax_zoo import JAX_ZOO

    if optimizer is not None:
        print(TRAIN_HEADER)
        if args.samples:
            for path in sorted((ROOT / "samples" / "torch").glob("train_*.py")):
                print(_train_row(str(path.relative_to(ROOT)), args.validate, optimizer), flush=True)
            return
        for z in ZOO:
            if (z.slow and not args.slow) or (
                args.names and not any(n in z.name for n in args.names)
            ):
                continue
            print(_train_row(z.name, args.validate, optimizer), flush=True)
        return

    print(
        "| model | kernels | SOLAR FLOPs | independent count | floor | SOLAR/floor "
        "| coverage | validation | wall s | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for z in (*ZOO, *JAX_ZOO):
        if z.slow and not args.slow:
            continue
        if args.names and not any(n in z.name for n in args.names):
            continue
        print(_row(z.name, args.validate), flush=True)


if __name__ == "__main__":
    main()
