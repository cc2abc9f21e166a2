"""``solar sweep``: one model over architectures × size bindings × precision policies.

Exit codes: 0 every point analysed (validation passed or skipped); 1 a capture failed
(diagnostic, timeout, memory limit, crash) or failed validation; 2 usage (E0933 a bad
axis or sweep file, E0934 too many points, E0908/E0932 the engine); 129/130/143 when
stopped by SIGHUP/SIGINT/SIGTERM, after the table of what finished is written.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from solar.cli.app import FRONTEND_HELP, VALIDATE_HELP, ArchOption, app, echo_err, examples
from solar.cli.distributed import (
    ClusterOption,
    GlobalBatchOption,
    MicroBatchOption,
    PhaseOption,
    RecomputeOption,
    ScheduleOption,
)
from solar.cli.inputs import (
    EntryArgsOption,
    EntryOption,
    InputShapeOption,
    InputsOption,
    program_inputs,
)
from solar.options import (
    CacheState,
    EngineName,
    FrontendChoice,
    Recompute,
    StepPhase,
    TableFormat,
    ValidateMode,
)

if TYPE_CHECKING:
    from solar.sweep import CaptureRecord

__all__ = ["sweep"]


@app.command(
    "sweep",
    epilog=examples(
        "solar sweep samples/ir/transformer_block.alir --set B=1,8,64 --set T=512,2048 "
        "--precision default,bf16",
        "solar sweep samples/torch/gpt_block.py --set SEQ=512..4096:512 --table csv --out sweep/",
        "solar sweep sweep.yaml --engine dask",
        "solar sweep benchmarks/distributed/gpt.py --train --validate off --cluster DGX_H100 "
        "--parallel tp=1,2,4,8 --parallel pp=1,2,4 "
        "--parallel dp=4 --global-batch 64  # plans ranked by bound",
        "solar sweep benchmarks/distributed/gpt.py --train --validate off --cluster DGX_H100 "
        "--parallel pp=4,8 --parallel vpp=1,2 "
        "--parallel mb=1,2 --global-batch 256 --schedule all --engine dask  # schedules",
        exit_codes="Exit codes: 0 every point analysed; 1 a capture failed or failed "
        "validation; 2 usage; 129/130/143 stopped by SIGHUP/SIGINT/SIGTERM (after the table "
        "is written).",
    ),
)
def sweep(
    source: Annotated[Path, typer.Argument(help="Model/IR file, or a YAML sweep file.")],
    arch: ArchOption = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NAME=VALUES",
            help="Sweep a size: NAME=1,8,64 or NAME=LO..HI:STEP (repeatable).",
        ),
    ] = None,
    precision: Annotated[
        str | None,
        typer.Option(help="Precision policies, comma-separated, e.g. default,bf16 "
                     "(default: default, or the sweep file's)."),
    ] = None,
    cache: Annotated[CacheState | None, typer.Option(
        help="Cache state: warm or cold (default: warm, or the sweep file's).")] = None,
    frontend: Annotated[FrontendChoice | None, typer.Option(
        help=f"{FRONTEND_HELP} Default: auto, or the sweep file's.")] = None,
    validate: Annotated[ValidateMode | None, typer.Option(
        help=f"{VALIDATE_HELP} Default: auto, or the sweep file's.")] = None,
    entry: EntryOption = None,
    entry_args: EntryArgsOption = None,
    inputs: InputsOption = None,
    input_shape: InputShapeOption = None,
    out: Annotated[
        Path, typer.Option("--out", help="Directory for the table, reports and logs.")
    ] = Path("solar-sweep"),
    table: Annotated[TableFormat, typer.Option(help="Table format.")] = "parquet",
    reports: Annotated[
        bool, typer.Option(help="Write one JSON report per point and precision.")
    ] = True,
    engine: Annotated[
        EngineName, typer.Option(help="local: processes here; dask: a Dask cluster.")
    ] = "local",
    scheduler: Annotated[
        str | None, typer.Option(help="Dask scheduler address; default: a LocalCluster.")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, max=256, help="Captures at once.")] = 2,
    timeout: Annotated[
        float, typer.Option(help="Wall-clock limit per capture in seconds (0: none).")
    ] = 900.0,
    max_rss: Annotated[
        float | None, typer.Option("--max-rss", help="Memory limit per capture in MiB.")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="Keep the points an earlier run into --out finished.")
    ] = False,
    cluster: ClusterOption = None,
    parallel: Annotated[
        list[str] | None,
        typer.Option("--parallel", metavar="KEY=VALUES",
                     help="With --cluster: sweep a plan axis, e.g. tp=1,2,4,8, or mb=1,2 "
                          "(micro-batch sizes) (repeatable); the plans are ranked by step "
                          "bound (docs/distributed.md)."),
    ] = None,
    micro_batch: MicroBatchOption = None,
    global_batch: GlobalBatchOption = None,
    train: Annotated[bool, typer.Option("--train", help="Plans of a training step.")] = False,
    recompute: RecomputeOption = "none",
    phase: PhaseOption = None,
    schedule: ScheduleOption = None,
) -> None:
    """Sweep one model: each distinct program captured once, sizes re-bound symbolically.

    With --cluster and --parallel: every plan of the grid bounded on one capture, the
    feasible ones ranked by step bound (plans.csv, plans.json in --out).
    """
    if cluster is not None or parallel:
        _plan_sweep(source, cluster, parallel or [], set_, frontend, entry, out, engine,
                    scheduler, workers, timeout, max_rss, micro_batch, global_batch, train,
                    recompute, phase, schedule)
        return
    from solar.batch import EngineOptions
    from solar.batch.job import BatchOptions
    from solar.hw import load_hardware_spec
    from solar.sweep import SweepLimits, SweepSpec, run_sweep
    from solar.sweep.table import text_table

    fields = _spec_fields(source, arch, set_, precision, cache, frontend, validate, entry,
                          entry_args, inputs, input_shape)
    spec = SweepSpec(**fields)  # type: ignore[arg-type]
    BatchOptions(timeout_s=timeout or None, max_rss_mib=max_rss)  # E0931 on a bad limit
    for name in spec.archs:  # a bad spec is a usage error before any work
        load_hardware_spec(name)
    engines = EngineOptions(engine=engine, workers=workers, scheduler=scheduler)
    limits = SweepLimits(
        timeout_s=timeout or None, max_rss_mib=max_rss, table=table,
        reports=reports,
    )  # fmt: skip
    stop = threading.Event()
    with _stopping_on_signals(stop) as received:
        summary = run_sweep(spec, out, limits=limits, engine=engines,
                            progress=_progress_printer(time.monotonic()), stop=stop,
                            resume=resume)
    typer.echo("\n".join(text_table(summary.rows, spec.size_names, summary.table_path)))
    counts = ", ".join(f"{n} {s}" for s, n in sorted(summary.counts.items()))
    resumed = f" ({summary.resumed} resumed)" if summary.resumed else ""
    typer.echo(
        f"{summary.points} points{resumed}, {len(summary.captures)} capture(s), "
        f"{len(summary.rows)} rows "
        f"({counts}) in {summary.wall_s:.1f} s; re-bound symbolically: "
        f"{', '.join(summary.rebindable) or 'none'}; table: {summary.table_path}"
    )
    if received:
        echo_err(f"stopped by {received[0]}; the table lists what finished")
        raise typer.Exit(128 + signal.Signals[received[0]].value)
    if summary.failed or summary.counts.get("validation-failed"):
        raise typer.Exit(1)


def _spec_fields(
    source: Path, arch: list[str] | None, set_: list[str] | None, precision: str | None,
    cache: CacheState | None, frontend: FrontendChoice | None, validate: ValidateMode | None,
    entry: str | None, entry_args: str | None, inputs: Path | None,
    input_shape: list[str] | None,
) -> dict[str, object]:
    """`SweepSpec` keyword arguments: the sweep file's, then the options given."""
    from solar.sweep import load_sweep_file, parse_axis

    fields: dict[str, object] = {"model": source}
    if source.suffix in (".yaml", ".yml"):
        fields = load_sweep_file(source)
    if arch:
        fields["archs"] = tuple(arch)
    if set_:
        fields["axes"] = tuple(parse_axis(s) for s in set_)
    if precision:
        from solar.sweep.spec import load_precisions

        fields["precisions"] = load_precisions(precision)
    given = program_inputs(entry, entry_args, inputs, input_shape)  # checked like analyze's
    for key, value in (("cache", cache), ("frontend", frontend), ("validate", validate),
                       ("entry", entry), ("entry_args", given.entry_args),
                       ("inputs_file", inputs)):  # fmt: skip
        if value is not None:
            fields[key] = value
    if input_shape:
        fields["input_shapes"] = tuple(input_shape)
    return fields


def _progress_printer(start: float) -> Callable[[int, int, CaptureRecord], None]:
    """One progress line per finished capture, on stderr."""

    def progress(done: int, total: int, record: CaptureRecord) -> None:
        bar = "#" * int(20 * done / total)
        sizes = " ".join(f"{k}={v}" for k, v in record.sizes.items())
        detail = f"  {record.error[:160]}" if record.error else ""
        echo_err(
            f"[{bar:<20}] {done}/{total} points  capture {record.index} ({sizes}) "
            f"{record.status}: {record.served} points, capture {record.capture_s:.1f} s, "
            f"binding {record.bind_s:.1f} s; {time.monotonic() - start:.1f} s{detail}"
        )

    return progress


@contextmanager
def _stopping_on_signals(stop: threading.Event) -> Iterator[list[str]]:
    """SIGINT, SIGTERM and SIGHUP set ``stop`` (the sweep ends with the table of what
    finished); yields the names of the signals received."""
    received: list[str] = []

    def handler(signum: int, _frame: object) -> None:
        received.append(signal.Signals(signum).name)
        stop.set()

    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, handler) for s in stops}
    try:
        yield received
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _plan_sweep(
    source: Path, cluster: str | None, axes: list[str], set_: list[str] | None,
    frontend: FrontendChoice | None, entry: str | None, out: Path, engine: EngineName,
    scheduler: str | None, workers: int, timeout: float, max_rss: float | None,
    micro_batch: int | None, global_batch: int | None, train: bool, recompute: Recompute,
    phase: StepPhase | None, schedule: str | None = None,
) -> None:
    """``solar sweep --cluster C --parallel ...``: plans ranked by step bound, fanned out
    over the engine's workers (Note [Plan fan-out] in `solar.sweep.plans`)."""
    from solar.batch import EngineOptions
    from solar.batch.remote import ShippedFile
    from solar.cli.app import parse_sets
    from solar.cli.distributed import parse_schedules
    from solar.diagnostics import PlanError
    from solar.hw.cluster_loader import load_cluster_spec
    from solar.sweep.plans import PlanSweep, plan_points, run_plan_sweep, write_plan_table

    if cluster is None or not axes:
        raise PlanError("a plan sweep needs --cluster and at least one --parallel axis",
                        code="E0806")
    load_cluster_spec(cluster)  # a bad cluster fails before any work
    points = plan_points(axes)
    plans = [p for p, _ in points]
    chosen = phase or ("train" if train else "prefill")
    task = PlanSweep(
        shipped=ShippedFile.of(source),
        options={"frontend": frontend or "auto", "entry": entry, "train": train,
                 "optimizer": "auto", "sizes": dict(parse_sets(set_))},
        cluster=cluster, plans=tuple(p.label() for p in plans),
        micro_batch=micro_batch or 1, global_batch=global_batch, recompute=recompute,
        phase=chosen, timeout_s=timeout or None, max_rss_mib=max_rss,
        micro_batches=tuple(mb for _, mb in points), schedules=parse_schedules(schedule),
    )
    engines = EngineOptions(engine=engine, workers=workers, scheduler=scheduler)
    echo_err(f"bounding {len(plans)} plan(s) on {cluster} "
             f"({min(workers, len(plans))} task(s), one capture each)")
    result = run_plan_sweep(task, engines)
    if result.get("status") != "ok":
        echo_err(f"the capture failed ({result.get('status')}): {result.get('error')}")
        raise typer.Exit(1)
    rows = result["rows"]
    assert isinstance(rows, list)
    path = write_plan_table(rows, out)
    for row in rows:
        step = row.get("step_s")
        shown = f"{step:.4g} s" if isinstance(step, float) else "-"
        why = row.get("binding") if row.get("status") == "ok" else row.get("error") or ""
        label = f"{row['plan']} mb={row.get('micro_batch')}" + (
            f" {row['schedule']}" if row.get("schedule") else "")
        typer.echo(f"{row['rank']:>4}  {label:<40} {row['status']:<10} {shown:>12}  {why}")
    typer.echo(f"{len(rows)} plans; table: {path}")
