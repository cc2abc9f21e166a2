"""Bound published large training runs with measured step times; print measured / bound.

Each row analyses `benchmarks/distributed/gpt.py` at the run's sizes and plan in a fresh
`solar analyze` process under `/usr/bin/time -v` (wall time and peak RSS of the analysis),
and prints a markdown table. tests/parallel/test_published.py keeps the same table as
a regression test (the bound must stay at or below the measured time).

    python benchmarks/distributed/published.py [NAME ...]
    python benchmarks/distributed/published.py --schedule all [NAME ...]

With ``--schedule all`` each pipelined run is analysed with ``--schedule all`` too and the
table gives every schedule's bound beside the schedule-free ones (docs/distributed.md,
"With the pipeline schedules").
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "benchmarks" / "distributed" / "gpt.py"

KORTHIKANTI = (
    "https://arxiv.org/abs/2205.05198 (Korthikanti et al., 'Reducing Activation Recomputation "
    "in Large Transformer Models', Table 5; DGX A100 80GB; sizes and plans Table 3; seen via "
    "calculon-ai/calculon calculon/llm/validation.py and validation/seqsel/tab5/*.json)"
)

NARAYANAN = (
    "https://arxiv.org/abs/2104.04473 (Narayanan et al., 'Efficient Large-Scale Language "
    "Model Training on GPU Clusters Using Megatron-LM', SC'21, Table 1: achieved teraFLOP/s "
    "per GPU on Selene's DGX A100 80GB, full recomputation, sequence 2048, vocabulary "
    "51,200; seen via SotaroKaneda/MLCarbon data/megatron_table.csv, which transcribes it; "
    "the step time is the paper's eq. (3) FLOPs over GPUs x the achieved rate)"
)


def narayanan_step_s(batch: int, layers: int, hidden: int, gpus: int, tflops: float,
                     seq: int = 2048, vocab: int = 51200) -> float:
    """A Table 1 row's measured step time: eq. (3)'s FLOPs per iteration,
    ``96 B s l h^2 (1 + s/6h + V/16lh)``, over ``gpus x`` the achieved rate.

    >>> round(narayanan_step_s(2304, 80, 12288, 1536, 148.0), 2)
    24.82
    """
    flops = 96 * batch * seq * layers * hidden ** 2 * (
        1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    return flops / (gpus * tflops * 1e12)


@dataclass(frozen=True)
class Run:
    """One published run: model sizes, plan, batch and its measured step time."""

    name: str
    layers: int
    hidden: int
    heads: int
    parallel: str
    global_batch: int
    micro_batch: int
    recompute: str
    measured_s: float
    cluster: str = "DGX_A100"
    seq: int = 2048
    source: str = KORTHIKANTI
    own_schedule: bool = True  # the plan's default schedule is the one the run used

    @property
    def gpus(self) -> int:
        dims = dict(item.split("=") for item in self.parallel.split(","))
        n = 1
        for key in ("tp", "pp", "dp", "cp"):
            n *= int(dims.get(key, "1"))
        return n


RUNS = (
    Run("22B full", 48, 6144, 64, "tp=8,pp=1,dp=1", 4, 4, "full", 1.42),
    Run("22B seq+sel", 48, 6144, 64, "tp=8,pp=1,dp=1,sp=1", 4, 4, "selective", 1.10),
    Run("175B full", 96, 12288, 96, "tp=8,pp=8,dp=1,vpp=3", 64, 1, "full", 18.13),
    Run("175B seq+sel", 96, 12288, 96, "tp=8,pp=8,dp=1,vpp=3,sp=1", 64, 1, "selective", 13.75),
    Run("530B full", 105, 20480, 128, "tp=8,pp=35,dp=1,vpp=3", 280, 1, "full", 49.05),
    Run("530B seq+sel", 105, 20480, 128, "tp=8,pp=35,dp=1,vpp=3,sp=1", 280, 1, "selective",
        37.83),
    Run("1T full", 128, 25600, 160, "tp=8,pp=64,dp=1", 512, 1, "full", 94.42),
    Run("1T seq+sel", 128, 25600, 160, "tp=8,pp=64,dp=1,sp=1", 512, 1, "selective", 71.49),
    # Narayanan et al. Table 1 (PTD-P); the schedule and micro-batch size of each row are
    # not given: micro-batch 1 (the least pipeline fill) and vpp=1's transfers (the
    # fewest), so `own_schedule` is off (docs/distributed.md, "Published runs")
    *(Run(f"N21 {name}", layers, hidden, heads, plan, batch, 1, "full",
          round(narayanan_step_s(batch, layers, hidden, gpus, tflops), 3),
          source=NARAYANAN, own_schedule=False)
      for name, layers, hidden, heads, plan, batch, gpus, tflops in (
          ("39.1B", 48, 8192, 64, "tp=8,pp=2,dp=32", 1536, 512, 138.0),
          ("76.1B", 60, 10240, 80, "tp=8,pp=4,dp=32", 1792, 1024, 140.0),
          ("145.6B", 80, 12288, 96, "tp=8,pp=8,dp=24", 2304, 1536, 148.0),
          ("310.1B", 96, 16384, 128, "tp=8,pp=16,dp=15", 2160, 1920, 155.0))),
)


def command(run: Run, output: Path, schedules: str | None = None) -> list[str]:
    """The `solar analyze` command line of one run (``schedules``: `--schedule`)."""
    return [
        sys.executable, "-m", "solar", "analyze", str(GPT), "--train", "--validate", "off",
        "-q", "--set", f"LAYERS={run.layers}", "--set", f"HIDDEN={run.hidden}",
        "--set", f"HEADS={run.heads}", "--set", f"SEQ={run.seq}",
        "--set", f"BATCH={run.micro_batch}", "--cluster", run.cluster,
        "--parallel", run.parallel, "--micro-batch", str(run.micro_batch),
        "--global-batch", str(run.global_batch), "--recompute", run.recompute,
        "--output", str(output), *(["--schedule", schedules] if schedules else []),
    ]


def measure(run: Run, schedules: str | None = None) -> dict[str, Any]:
    """Analyse one run; its bound, wall time, peak RSS and (with ``schedules``) the
    report's pipeline section."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-v", *command(run, out, schedules)],
                              cwd=ROOT, capture_output=True, text=True, check=True)
        wall = time.monotonic() - start
        report = json.loads(out.read_text())
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)",
                                             proc.stderr))
    d = report["distributed"]
    return {"bound_s": d["step"]["time_s"], "wall_s": wall, "cpu_s": cpu, "rss_mb": rss / 1024,
            "binding": d["step"]["binding"], "mfu": d["step"]["mfu_ceiling"],
            "resource_s": max(r["time_s"] for r in d["ranks"]), "schedule": d.get("schedule")}


SCHEDULE_COLUMNS = ("1f1b", "zb-h1", "zb-h2", "zbv", "dualpipe")


def _schedule_row(run: Run, r: dict[str, Any]) -> str:
    """One row of the `--schedule all` table: the schedule-free bounds and each schedule."""
    sc = r["schedule"]
    times = {row["schedule"]: row["time_s"] for row in sc["schedules"]}
    own = sc["drawn"]
    own_cell = (f"{times[own]:.3f}, {run.measured_s / times[own]:.2f}" if own == "interleaved"
                else f"(vpp=1: {own}) {times[own]:.3f}, {run.measured_s / times[own]:.2f}")
    bi = sc["bidirectional_s"]
    cells = [f"{times[k]:.3f}" if k in times else "-" for k in SCHEDULE_COLUMNS]
    return (f"| {run.name} | {run.measured_s} | {r['resource_s']:.3f} | {sc['one_way_s']:.3f} "
            f"| {f'{bi:.3f}' if bi is not None else '- (pp odd)'} | {r['bound_s']:.3f} | "
            f"{run.measured_s / r['bound_s']:.2f} | {r['binding']} | {own_cell} | "
            f"{' | '.join(cells)} | {sc['periodic_s']:.3f} |")


def main(argv: list[str]) -> None:
    """Print the table for the runs named (all by default); ``--schedule all`` prints
    the pipelined runs' schedule table instead."""
    schedules = None
    if argv[:1] == ["--schedule"]:
        schedules, argv = argv[1], argv[2:]
    names = argv
    if schedules:
        print("| run | measured s | resource bound s | one-way schedule-free s | "
              "bidirectional s | step bound s | measured / bound | binds | the run's "
              "schedule s, measured / it | " + " | ".join(SCHEDULE_COLUMNS) + " | periodic |")
        print("|---" * (9 + len(SCHEDULE_COLUMNS) + 1) + "|")
    else:
        print("| run | plan | GPUs | global batch x seq | measured s | SOLAR bound s | "
              "measured/bound | binds | analysis wall s (CPU s) | RSS MB |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for run in RUNS:
        if (names and run.name not in names) or (schedules and not run.own_schedule):
            continue
        if schedules and "pp=1," in run.parallel:
            continue
        r = measure(run, schedules)
        if schedules:
            print(_schedule_row(run, r), flush=True)
            continue
        print(f"| {run.name} | {run.parallel}, recompute {run.recompute} | {run.gpus} | "
              f"{run.global_batch} x {run.seq} | {run.measured_s} | {r['bound_s']:.3f} | "
              f"{run.measured_s / r['bound_s']:.2f} | {r['binding']} | {r['wall_s']:.0f} "
              f"({r['cpu_s']:.0f}) | {r['rss_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
