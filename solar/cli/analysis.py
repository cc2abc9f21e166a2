"""``solar analyze``, ``bounds``, ``compare``, ``provision`` and ``cache``.

Every command that bounds a program prepares it through `solar.pipeline` (Note [One
preparation path]), so they agree with `solar analyze` on sizes and precision.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

import typer

from solar.cli.app import (
    FRONTEND_HELP,
    VALIDATE_HELP,
    ArchOption,
    QuietOption,
    SetOption,
    app,
    cache_app,
    check_positive,
    deprecated_alias,
    echo_err,
    examples,
    parse_sets,
    raise_for_validation,
)
from solar.cli.distributed import (
    ClusterOption,
    FailOption,
    GlobalBatchOption,
    MicroBatchOption,
    MoeLoadOption,
    MoeSlotsOption,
    ParallelOption,
    PhaseOption,
    PlanFileOption,
    RecomputeOption,
    ScheduleOption,
    distributed_request,
)
from solar.cli.inputs import (
    EntryArgsOption,
    EntryOption,
    InputShapeOption,
    InputsOption,
    ProgramInputs,
    program_inputs,
)
from solar.guard import DEFAULT_TIME_LIMIT_S
from solar.options import (
    DEFAULT_ARCH,
    BoundModel,
    CacheState,
    FrontendChoice,
    OptimizerChoice,
    OutputFormat,
    PrecisionPolicy,
    ValidateMode,
)

if TYPE_CHECKING:
    from solar.frontends.llm import LLMConfig
    from solar.pipeline import PreparedProgram
    from solar.report import Report

__all__ = ["analyze", "bounds", "cache_clear", "compare", "provision"]

SourceArgument = Annotated[
    Path | None,
    typer.Argument(help="Model file (.py) or IR file (.alir); omit with --entry pkg.mod:attr."),
]
"""The program a command analyses (every one takes the same, with `solar.cli.inputs`)."""

MAX_MEASURED_MS = 1e9
"""``--measured-ms`` above this (11.6 days) is a typo; it would overflow headroom ratios."""

MAX_TIME_LIMIT_S = 7 * 86400.0
"""``--time-limit`` at most a week (a larger one is a typo, and overflows timers)."""


def _llm_config(
    model: str | None,
    temperature: float | None,
    max_attempts: int | None,
    timeout: float | None,
    cache_dir: Path | None,
    no_cache: bool,
) -> LLMConfig | None:
    """An LLMConfig when a model is configured (flag or SOLAR_LLM_MODEL), else None."""
    if not (model or os.environ.get("SOLAR_LLM_MODEL")):
        return None
    from solar.frontends.llm import LLMConfig

    # flags left out keep LLMConfig's defaults (read from the environment)
    fields: dict[str, Any] = {"use_cache": not no_cache}
    for key, value in (
        ("model", model),
        ("temperature", temperature),
        ("max_attempts", max_attempts),
        ("timeout_s", timeout),
        ("cache_dir", cache_dir),
    ):
        if value is not None:
            fields[key] = value
    return LLMConfig(**fields)


TimeLimitOption: TypeAlias = Annotated[
    float,
    typer.Option(
        "--time-limit", help="Stop the analysis after this many seconds (E0950, exit 1)."
    ),
]
"""``--time-limit`` of every command that runs the user's program (Note [Guarded run])."""


@app.command(
    "analyze",
    epilog=examples(
        "solar analyze samples/torch/gpt_block.py  # bounds on H100_SXM, validated",
        "solar analyze examples/kernelbench_mlp.py --arch H100_SXM --arch B200 -o report.json",
        "solar analyze samples/torch/gpt_block.py --set SEQ=4096 --top 3 --format json",
        "solar analyze examples/tinynet.py --entry TinyNet --input-shape x=2,8",
        "solar analyze model.py --inputs inputs.npz  # arr_0.. positional, other names keyword",
        "solar analyze samples/torch/train_cnn.py --train  # one training step",
        "solar analyze benchmarks/distributed/gpt.py --train --validate off --cluster DGX_H100 "
        "--parallel tp=8,pp=4,dp=2 --micro-batch 1 --global-batch 64",
    ),
)
def analyze(
    source: Annotated[
        Path | None,
        typer.Argument(help="Model file (.py) or IR file (.alir); omit with --entry pkg.mod:attr."),
    ] = None,
    arch: ArchOption = None,
    precision: Annotated[PrecisionPolicy, typer.Option(help="Precision policy.")] = "default",
    cache: Annotated[
        CacheState, typer.Option(help="Cache state: warm (repeated runs) or cold (first run).")
    ] = "warm",
    frontend: Annotated[FrontendChoice, typer.Option(help=FRONTEND_HELP)] = "auto",
    ir: Annotated[
        Path | None, typer.Option("--ir", help="Analyse this hand-written IR against the model.")
    ] = None,
    set_: SetOption = None,
    validate: Annotated[ValidateMode, typer.Option(help=VALIDATE_HELP)] = "auto",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the JSON report here.")
    ] = None,
    save_ir: Annotated[Path | None, typer.Option(help="Write the IR here.")] = None,
    include_ir: Annotated[
        bool, typer.Option("--include-ir", help="Embed the IR text in the report.")
    ] = False,
    format_: Annotated[
        OutputFormat, typer.Option("--format", help="Stdout: a summary (text) or the JSON report.")
    ] = "text",
    measured_ms: Annotated[
        float | None, typer.Option(help="A measured time (ms) from elsewhere.")
    ] = None,
    measure: Annotated[
        bool, typer.Option("--measure", help="Time the program on the local device.")
    ] = False,
    entry: EntryOption = None,
    entry_args: EntryArgsOption = None,
    inputs: InputsOption = None,
    input_shape: InputShapeOption = None,
    reference: Annotated[
        Path | None, typer.Option(help="Reference .npz (inputs+outputs) for an .alir file.")
    ] = None,
    train: Annotated[
        bool,
        typer.Option(
            "--train", help="Bound one training step: forward, loss, backward, optimizer update."
        ),
    ] = False,
    optimizer: Annotated[
        OptimizerChoice,
        typer.Option(help="The training step's update (auto: the file's get_optimizer, else sgd)."),
    ] = "auto",
    train_mode: Annotated[
        bool,
        typer.Option("--train-mode", help="Analyse the forward with the module in training mode."),
    ] = False,
    time_budget: Annotated[float, typer.Option(help="Validation time budget (s).")] = 60.0,
    reference_budget: Annotated[
        float | None,
        typer.Option(
            help="Memory (MiB) a real reference run may touch; above it the program is "
            "validated at reduced sizes or batch (default: a quarter of "
            "$SOLAR_VALIDATION_MEMORY, 1024 MiB, or of MemAvailable if less)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(
        help="LLM model name (LLM frontend; default $SOLAR_LLM_MODEL).")] = None,
    temperature: Annotated[float | None, typer.Option(help="LLM temperature (default 0).")] = None,
    max_attempts: Annotated[int | None, typer.Option(
        help="LLM replies to try, the first plus repairs (default 4).")] = None,
    timeout: Annotated[float | None, typer.Option(
        help="LLM request timeout in seconds (default 120).")] = None,
    llm_cache_dir: Annotated[
        Path | None, typer.Option(
            "--llm-cache-dir",
            help="LLM translation cache directory (default $SOLAR_CACHE_DIR/llm, else "
            "./.solar-cache/llm).")
    ] = None,
    llm_cache: Annotated[
        bool,
        typer.Option(
            "--llm-cache/--no-llm-cache",
            help="Read cached LLM translations (--no-llm-cache asks again and refreshes them).",
            show_default=False,
        ),
    ] = True,
    old_cache_dir: Annotated[Path | None, typer.Option("--cache-dir", hidden=True)] = None,
    old_no_cache: Annotated[bool, typer.Option("--no-cache", hidden=True)] = False,
    quiet: QuietOption = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also log each pass's details on stderr.")
    ] = False,
    time_limit: TimeLimitOption = DEFAULT_TIME_LIMIT_S,
    top: Annotated[
        int, typer.Option("--top", min=0, help="Kernels listed per device in the summary.")
    ] = 8,
    cluster: ClusterOption = None,
    parallel: ParallelOption = None,
    plan: PlanFileOption = None,
    micro_batch: MicroBatchOption = None,
    global_batch: GlobalBatchOption = None,
    recompute: RecomputeOption = "none",
    schedule: ScheduleOption = None,
    fail: FailOption = None,
    moe_load: MoeLoadOption = None,
    moe_slots: MoeSlotsOption = None,
    phase: PhaseOption = None,
) -> None:
    """Analyse a program: frontend → validate → bounds → report.

    Prints a summary (or the JSON report with --format json) on stdout and progress on
    stderr; exit 1 when validation failed or could not run, after the report is shown.
    \f
    The user's program runs under `solar.guard.run_guarded` (Note [Guarded run]): a
    time limit, and a process of its own, so that ``sys.exit``, ``os._exit``, a
    segfault or an endless loop in the model end in a diagnostic (E0530-E0532, E0950).
    Exit 1 when validation failed or could not run (E0310, E0300), after the report
    is written and shown.
    """
    from solar.cli.progress import announce_start, stage_progress

    # the first stage is shown before the slow imports (Note [Progress from the first second])
    start = announce_start(f"analysing {source if source is not None else entry}", quiet=quiet)
    from solar.files import prepare_output, write_atomic
    from solar.guard import ResultCodec, run_guarded, user_stdout_to_stderr
    from solar.pipeline import AnalyzeOptions
    from solar.pipeline import analyze as run_analyze
    from solar.report import Report, render_text

    check_positive("--time-budget", time_budget)
    check_positive("--time-limit", time_limit, maximum=MAX_TIME_LIMIT_S)
    check_positive("--reference-budget", reference_budget, maximum=2.0**40)
    check_positive("--measured-ms", measured_ms, maximum=MAX_MEASURED_MS)
    for path in (output, save_ir):
        if path is not None:
            prepare_output(path)  # a bad -o fails before any work
    request = distributed_request(cluster, parallel, plan, micro_batch, global_batch,
                                  recompute, phase, train=train, schedule=schedule,
                                  fail=fail, moe_load=moe_load, moe_slots=moe_slots)
    if not arch and request is not None:  # the cluster's device, not the default one
        from solar.hw.cluster_loader import load_cluster_spec

        arch = [load_cluster_spec(request.cluster).device]
    options = AnalyzeOptions(
        archs=tuple(arch or [DEFAULT_ARCH]),
        precision=precision,
        cache=cache,
        frontend=frontend,
        ir_file=ir,
        sizes=parse_sets(set_),
        validate=validate,
        time_budget_s=time_budget,
        reference_budget_bytes=(
            None if reference_budget is None else int(reference_budget * 2**20)
        ),
        measured_ms=measured_ms,
        measure=measure,
        **program_inputs(entry, entry_args, inputs, input_shape).fields(),  # type: ignore[arg-type]
        reference_file=reference,
        train=train or train_mode,
        train_step=train,
        optimizer=optimizer,
        include_ir=include_ir,
        save_ir=save_ir,
        llm=_llm_config(
            model,
            temperature,
            max_attempts,
            timeout,
            deprecated_alias("--cache-dir", "--llm-cache-dir", old_cache_dir) or llm_cache_dir,
            not llm_cache or bool(deprecated_alias("--no-cache", "--no-llm-cache", old_no_cache)),
        ),
        distributed=request,
    )
    if verbose:
        logging.getLogger("solar").setLevel(logging.INFO)

    def work() -> Report:
        # stdout is the report's alone (Note [User output]); stages go to stderr at once
        with stage_progress(quiet=quiet, start=start) as progress, user_stdout_to_stderr():
            return run_analyze(source, options, progress=progress)

    # the report crosses from the guarded child as JSON (Note [Result channel])
    codec = ResultCodec(Report.model_dump_json, Report.model_validate_json)
    report = run_guarded(work, time_limit_s=time_limit, codec=codec)
    text = report.to_json()
    if output is not None:
        write_atomic(output, text)
    shown = text if format_ == "json" else render_text(report, top=top)
    typer.echo(shown, nl=not shown.endswith("\n"))  # the shell prompt starts a new line
    raise_for_validation(report.validation)


def _lift(
    source: Path | None,
    frontend: FrontendChoice,
    set_: list[str] | None,
    given: ProgramInputs,
    precision: PrecisionPolicy,
    *,
    quiet: bool = False,
    time_limit: float = DEFAULT_TIME_LIMIT_S,
) -> PreparedProgram:
    """The program's einsum graph, sizes and precision policy, as `solar analyze` has them.

    The user's program runs under `solar.guard.run_guarded` in this process: the time
    limit, and ``sys.exit`` or ``KeyboardInterrupt`` in the model as diagnostics.
    """
    check_positive("--time-limit", time_limit, maximum=MAX_TIME_LIMIT_S)
    from solar.cli.progress import announce_start, stage_progress

    start = announce_start(f"loading {source or given.entry} ({frontend} frontend)", quiet=quiet)
    from solar.guard import run_guarded, user_stdout_to_stderr
    from solar.pipeline import AnalyzeOptions, lift_source

    options = AnalyzeOptions(
        frontend=frontend,
        sizes=parse_sets(set_),
        validate="off",
        precision=precision,
        **given.fields(),  # type: ignore[arg-type]
    )
    def work() -> PreparedProgram:
        # stdout is the command's table alone
        with stage_progress(quiet=quiet, start=start) as progress, user_stdout_to_stderr():
            return lift_source(source, options, progress=progress)

    # In this process: a prepared program holds closures that do not pickle, so a
    # segfault or `os._exit` is not contained here (it is in `solar analyze`).
    return run_guarded(work, isolate=False, time_limit_s=time_limit)


@app.command(
    "bounds",
    epilog=examples(
        "solar bounds samples/ir/matmul.alir --set M=8192",
        "solar bounds samples/torch/gpt_block.py --arch H100_SXM --arch B200 --format json",
    ),
)
def bounds(
    source: SourceArgument = None,
    arch: ArchOption = None,
    set_: SetOption = None,
    entry: EntryOption = None,
    entry_args: EntryArgsOption = None,
    inputs: InputsOption = None,
    input_shape: InputShapeOption = None,
    precision: Annotated[PrecisionPolicy, typer.Option(help="Precision policy.")] = "default",
    frontend: Annotated[FrontendChoice, typer.Option(help=FRONTEND_HELP)] = "auto",
    format_: Annotated[
        OutputFormat, typer.Option("--format", help="Stdout: a table (text) or JSON.")
    ] = "text",
    json_: Annotated[bool, typer.Option("--json", hidden=True)] = False,
    quiet: QuietOption = False,
    time_limit: TimeLimitOption = DEFAULT_TIME_LIMIT_S,
) -> None:
    """The three SOL bounds of a program on one or more devices (no validation)."""
    from solar.cli.tables import print_table
    from solar.hw import load_hardware_spec
    from solar.pipeline import bound_arch
    from solar.report import dumps_deterministic, format_bytes, format_flops, format_time

    given = program_inputs(entry, entry_args, inputs, input_shape)
    prepared = _lift(
        source, frontend, set_, given, precision, quiet=quiet, time_limit=time_limit
    )
    sizes = prepared.sizes
    shown = dict(prepared.front.source_sizes or sizes)  # a model file: its size constants
    rows = [
        bound_arch(prepared.graph, load_hardware_spec(a), precision=prepared.precision, sizes=sizes)
        for a in (arch or [DEFAULT_ARCH])
    ]
    if deprecated_alias("--json", "--format json", json_) or format_ == "json":
        typer.echo(
            dumps_deterministic(
                {"sizes": shown, "archs": [r.model_dump(mode="json") for r in rows]}
            ),
            nl=False,
        )
        return
    typer.echo("sizes: " + (", ".join(f"{k}={v}" for k, v in sorted(shown.items())) or "-"))
    print_table(
        ("arch", "model", "bound>", "FLOPs>", "DRAM>", "bottleneck"),
        [
            (
                r.arch,
                b.model,
                format_time(b.time_s),
                format_flops(b.flops),
                format_bytes(b.dram_bytes),
                b.bottleneck,
            )
            for r in rows
            for b in r.bounds
        ],
    )


@app.command(
    "compare",
    epilog=examples(
        "solar compare samples/ir/matmul.alir --set M=4096 --set N=4096 --set K=4096",
        "solar compare samples/torch/gpt_block.py --arch H100_SXM --arch MI300X --arch TPU_v5p",
    ),
)
def compare(
    source: SourceArgument = None,
    arch: Annotated[
        list[str] | None,
        typer.Option(
            "--arch", metavar="SPEC", help="Hardware spec (repeatable). Default: every bundled one."
        ),
    ] = None,
    set_: SetOption = None,
    precision: Annotated[PrecisionPolicy, typer.Option(help="Precision policy.")] = "default",
    frontend: Annotated[FrontendChoice, typer.Option(help=FRONTEND_HELP)] = "auto",
    entry: EntryOption = None,
    entry_args: EntryArgsOption = None,
    inputs: InputsOption = None,
    input_shape: InputShapeOption = None,
    format_: Annotated[OutputFormat, typer.Option("--format", help="Stdout format.")] = "text",
    quiet: QuietOption = False,
    time_limit: TimeLimitOption = DEFAULT_TIME_LIMIT_S,
) -> None:
    """Cross-platform table: the same program's bounds on several devices.

    Each row names the precision its FLOPs were charged at; `*` marks fp32 work
    charged at a reduced-precision peak.
    """
    from solar.bounds import cross_platform
    from solar.cli.device_tables import compare_json, compare_text
    from solar.hw import list_hardware_specs, load_hardware_spec

    given = program_inputs(entry, entry_args, inputs, input_shape)
    prepared = _lift(
        source, frontend, set_, given, precision, quiet=quiet, time_limit=time_limit
    )
    specs = [load_hardware_spec(a) for a in arch] if arch else list(list_hardware_specs())
    rows = cross_platform(
        prepared.graph, specs, precision_policy=prepared.precision, sizes=prepared.sizes
    )
    sizes = dict(prepared.front.source_sizes or prepared.sizes)
    text = compare_json(rows, sizes) if format_ == "json" else compare_text(rows)
    typer.echo(text, nl=False)


@app.command(
    "provision",
    epilog=examples(
        "solar provision samples/torch/gpt_block.py --target-ms 2.0",
        "solar provision examples/kernelbench_mlp.py --target-ms 0.5 --model unfused --format json",
    ),
)
def provision(
    source: SourceArgument = None,
    *,
    target_ms: Annotated[float, typer.Option(help="Target run time in milliseconds.")],
    model: Annotated[BoundModel, typer.Option(help="Bound model.")] = "fused",
    arch: Annotated[
        list[str] | None,
        typer.Option(
            "--arch", metavar="SPEC", help="Device (repeatable). Default: every bundled spec."
        ),
    ] = None,
    set_: SetOption = None,
    precision: Annotated[PrecisionPolicy, typer.Option(help="Precision policy.")] = "default",
    frontend: Annotated[FrontendChoice, typer.Option(help=FRONTEND_HELP)] = "auto",
    entry: EntryOption = None,
    entry_args: EntryArgsOption = None,
    inputs: InputsOption = None,
    input_shape: InputShapeOption = None,
    format_: Annotated[OutputFormat, typer.Option("--format", help="Stdout format.")] = "text",
    quiet: QuietOption = False,
    time_limit: TimeLimitOption = DEFAULT_TIME_LIMIT_S,
) -> None:
    """Inverse roofline: the bandwidth and throughput a device needs to hit a target time.

    Each device row names the precision its FLOPs were charged at; `*` marks fp32 work
    charged at a reduced-precision peak.
    """
    from solar.bounds import inverse_roofline
    from solar.cli.device_tables import provision_json, provision_text
    from solar.hw import list_hardware_specs, load_hardware_spec

    given = program_inputs(entry, entry_args, inputs, input_shape)
    prepared = _lift(
        source, frontend, set_, given, precision, quiet=quiet, time_limit=time_limit
    )
    specs = [load_hardware_spec(a) for a in arch] if arch else list(list_hardware_specs())
    inv = inverse_roofline(
        prepared.graph,
        target_time_s=target_ms / 1e3,
        model=model,
        precision_policy=prepared.precision,
        sizes=prepared.sizes,
        specs=specs,
    )
    sizes = dict(prepared.front.source_sizes or prepared.sizes)
    text = provision_json(inv, sizes) if format_ == "json" else provision_text(inv)
    typer.echo(text, nl=False)


@cache_app.command(
    "clear",
    epilog=examples("solar cache clear", "solar cache clear --llm-cache-dir my-llm-cache/"),
)
def cache_clear(
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--llm-cache-dir",
            "--cache-dir",
            help="LLM translation cache directory. Default: $SOLAR_CACHE_DIR/llm, else "
            "./.solar-cache/llm.",
        ),
    ] = None,
) -> None:
    """Delete every cached LLM translation."""
    from solar.frontends.llm import clear_cache, default_cache_dir

    n = clear_cache(cache_dir or default_cache_dir())
    echo_err(f"removed {n} cached translation(s)")
