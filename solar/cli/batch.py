"""``solar batch``: many files, each in a fresh process, with per-file limits.

Exit codes: 0 every analysed file passed; 1 a file failed (diagnostic, timeout, memory
limit, crash) or failed validation; 2 usage; 128+N when stopped by signal N (130 for
SIGINT, 143 for SIGTERM), after the summaries of what finished are written.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

from solar.cli.app import (
    FRONTEND_HELP,
    VALIDATE_HELP,
    ArchOption,
    SetOption,
    app,
    echo_err,
    examples,
    parse_sets,
)
from solar.diagnostics import UsageError
from solar.options import (
    DEFAULT_ARCH,
    CacheState,
    EngineName,
    FrontendChoice,
    OptimizerChoice,
    PrecisionPolicy,
    ValidateMode,
)

__all__ = ["batch"]


@app.command(
    "batch",
    epilog=examples(
        "solar batch samples/torch --workers 2 --out reports/",
        "solar batch 'models/*.py' --arch A100_SXM_80GB --timeout 300 --max-rss 8000 --resume",
        "solar batch models/ --engine dask --scheduler tcp://head:8786",
        exit_codes="Exit codes: 0 every file passed; 1 a file failed or failed validation; "
        "2 usage; 128+N stopped by signal N (after the summaries are written).",
    ),
)
def batch(
    sources: Annotated[str, typer.Argument(help="Directory or glob of model/IR files.")],
    out: Annotated[
        Path, typer.Option("--out", help="Directory for reports, logs and summaries.")
    ] = Path("solar-reports"),
    arch: ArchOption = None,
    precision: Annotated[PrecisionPolicy, typer.Option(help="Precision policy.")] = "default",
    cache: Annotated[CacheState, typer.Option(help="Cache state: warm or cold.")] = "warm",
    frontend: Annotated[FrontendChoice, typer.Option(help=FRONTEND_HELP)] = "auto",
    set_: SetOption = None,
    entry: Annotated[str | None, typer.Option(help="Function to analyse in each file.")] = None,
    workers: Annotated[
        int,
        typer.Option(
            min=1, max=256, help="Files at the same time (dask: the LocalCluster's workers)."
        ),
    ] = 2,
    engine: Annotated[
        EngineName, typer.Option(help="local: processes here; dask: a Dask cluster.")
    ] = "local",
    scheduler: Annotated[
        str | None,
        typer.Option(help="Dask scheduler address (tcp://host:8786); default: a LocalCluster."),
    ] = None,
    validate: Annotated[ValidateMode, typer.Option(help=VALIDATE_HELP)] = "auto",
    train: Annotated[
        bool,
        typer.Option(help="Bound one training step of each file (as `solar analyze --train`)."),
    ] = False,
    optimizer: Annotated[
        OptimizerChoice,
        typer.Option(help="The training step's update (auto: the file's get_optimizer, else sgd)."),
    ] = "auto",
    train_mode: Annotated[
        bool, typer.Option(help="Analyse each forward with the module in training mode.")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Reuse files finished with the same input and options.")
    ] = False,
    time_budget: Annotated[float, typer.Option(help="Validation budget per file (s).")] = 60.0,
    timeout: Annotated[
        float, typer.Option(help="Wall-clock limit per file in seconds (0: none).")
    ] = 900.0,
    max_rss: Annotated[
        float | None, typer.Option("--max-rss", help="Memory limit per file in MiB.")
    ] = None,
) -> None:
    """Analyse many files, each in a fresh process; one report each plus summary.csv/json."""
    from solar.batch import BatchOptions, EngineOptions, FileResult, expand_sources, run_batch
    from solar.hw import load_hardware_spec

    options = BatchOptions(
        archs=tuple(arch or [DEFAULT_ARCH]),
        precision=precision,
        cache=cache,
        frontend=frontend,
        sizes=parse_sets(set_),
        validate=validate,
        time_budget_s=time_budget,
        entry=entry,
        train=train_mode,
        train_step=train,
        optimizer=optimizer,
        timeout_s=timeout if timeout != 0 else None,
        max_rss_mib=max_rss,
        resume=resume,
    )
    engines = EngineOptions(engine=engine, workers=workers, scheduler=scheduler)
    for name in options.archs:  # a bad spec is a usage error before any work
        load_hardware_spec(name)
    files = expand_sources(sources)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UsageError(f"--out {out} exists and is not a directory", code="E0940") from None
    except OSError as err:
        raise UsageError(f"cannot create --out {out}: {err.strerror}", code="E0941") from None

    def progress(done: int, total: int, result: FileResult) -> None:
        if result.status == "cancelled" and not result.rows[0].wall_s:
            return  # never started: the final line counts these
        status = f"{result.status} (resumed)" if result.resumed else result.status
        error = result.rows[0].error if result.status != "ok" else None
        detail = f"  {error[:160]}" if error and result.status != "skipped" else ""
        bar = "#" * int(20 * done / total)
        echo_err(f"[{bar:<20}] {done}/{total} {status:<17} {result.file}{detail}")

    summary = run_batch(files, options, out, engine=engines, progress=progress)
    counts = {s: summary.count(s) for s in ("ok", "validation-failed", "skipped", "cancelled")}
    analysed = len(summary.files) - counts["skipped"]
    parts = [f"{counts['ok']}/{analysed} ok", f"{summary.failed} failed"]
    if counts["validation-failed"]:
        parts.append(f"{counts['validation-failed']} failed validation")
    if counts["skipped"]:
        parts.append(f"{counts['skipped']} skipped (not model files)")
    if counts["cancelled"]:
        parts.append(f"{counts['cancelled']} cancelled")
    line = ", ".join(parts) + f"; summaries: {summary.csv_path} {summary.json_path}"
    if summary.stopped_by is not None:
        echo_err(f"stopped by {summary.stopped_by}; the summaries list what finished")
    typer.echo(line)
    if summary.stopped_by is not None:
        raise typer.Exit(128 + signal.Signals[summary.stopped_by].value)
    if summary.failed or counts["validation-failed"]:
        raise typer.Exit(1)
