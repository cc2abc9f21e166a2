"""The ``solar`` command line: thin wrappers over the library.

Contract: each command parses its arguments, calls one library function and
renders the result. Data goes to stdout, diagnostics to stderr. Exit codes:
0 = done (and validation, if any, passed); 1 = the input is at fault (IR syntax or
verify errors, validation mismatch, a failed gate); 2 = usage, configuration or
internal error.
"""

from __future__ import annotations

import logging
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from solar import __version__
from solar.diagnostics import SolarError, UsageError

__all__ = ["app", "main"]

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    help="SOLAR: speed-of-light bounds for PyTorch and JAX programs.",
)
ir_app = typer.Typer(no_args_is_help=True, help="Check, format and run Affine Loop IR files.")
specs_app = typer.Typer(no_args_is_help=True, help="Browse the hardware spec library.")
cache_app = typer.Typer(no_args_is_help=True, help="Manage the LLM translation cache.")
app.add_typer(ir_app, name="ir")
app.add_typer(specs_app, name="specs")
app.add_typer(cache_app, name="cache")


def _err(text: str) -> None:
    typer.echo(text, err=True)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}", code="E0901") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"cannot read {path}: {err}", code="E0902") from None


def _parse_sets(values: list[str] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in values or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--set expects NAME=VALUE, got `{item}`", code="E0903")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise UsageError(f"--set {name}: `{value}` is not an integer", code="E0903") from None
    return out


# ---------------------------------------------------------------------------- ir
@ir_app.command("check")
def ir_check(
    files: Annotated[list[Path], typer.Argument(help="IR files (.alir) to verify.")],
) -> None:
    """Parse and verify IR files; diagnostics go to stderr."""
    from solar.ir import parse_program, verify_program

    failed = 0
    for path in files:
        try:
            verify_program(parse_program(_read_text(path), filename=str(path)))
        except SolarError as err:
            if err.exit_code != 1:
                raise
            _err(err.render())
            failed += 1
    if failed:
        _err(f"{failed} of {len(files)} file(s) failed")
        raise typer.Exit(1)
    _err(f"{len(files)} file(s) ok")


@ir_app.command("fmt")
def ir_fmt(
    file: Annotated[Path, typer.Argument(help="IR file to print canonically.")],
) -> None:
    """Print the canonical form of an IR file on stdout."""
    from solar.ir import parse_program, print_program

    typer.echo(print_program(parse_program(_read_text(file), filename=str(file))), nl=False)


def _load_checked(file: Path):  # type: ignore[no-untyped-def]
    from solar.ir import parse_program, verify_program

    program = parse_program(_read_text(file), filename=str(file))
    verify_program(program)
    return program


@ir_app.command("run")
def ir_run(
    file: Annotated[Path, typer.Argument(help="IR file to execute.")],
    inputs: Annotated[
        Path | None, typer.Option(help=".npz with one array per input/param (default: random).")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="NAME=VALUE (repeatable).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write outputs (.npz).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for random inputs.")] = 0,
) -> None:
    """Execute IR with the vectorised numpy executor."""
    import numpy as np

    from solar.frontends.adapters import _load_npz
    from solar.ir import resolve_sizes
    from solar.validate import execute_program, random_inputs

    program = _load_checked(file)
    sizes = _parse_sets(set_)
    if inputs is not None:
        data = _load_npz(inputs)
    else:
        data = random_inputs(program, resolve_sizes(program, sizes), np.random.default_rng(seed))
    outs = execute_program(program, data, sizes=sizes)
    for name, arr in outs.items():
        finite = arr[np.isfinite(arr)] if arr.dtype.kind == "f" else arr
        stats = (
            f"min {finite.min():.6g} max {finite.max():.6g} mean {finite.mean():.6g}"
            if finite.size
            else "no finite values"
        )
        typer.echo(f"{name}: {arr.dtype}{list(arr.shape)}  {stats}")
    if output is not None:
        np.savez(output, **outs)  # type: ignore[arg-type]
        _err(f"wrote {output}")


@ir_app.command("validate")
def ir_validate(
    file: Annotated[Path, typer.Argument(help="IR file to validate.")],
    reference: Annotated[
        Path, typer.Option(help=".npz with the inputs/params and the expected outputs by name.")
    ],
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="NAME=VALUE (repeatable).")
    ] = None,
    time_budget: Annotated[float, typer.Option(help="Time budget (s).")] = 60.0,
) -> None:
    """Execute IR on reference inputs and compare with reference outputs (exit 1 on mismatch)."""
    from solar.frontends.adapters import _load_npz
    from solar.validate import validate

    program = _load_checked(file)
    data = _load_npz(reference)
    outs = {t.name for t in program.tensors if t.role == "output"}
    result = validate(
        program,
        {k: v for k, v in data.items() if k not in outs},
        {k: v for k, v in data.items() if k in outs},
        sizes=_parse_sets(set_) or None,
        time_budget_s=time_budget,
    )
    for o in result.outputs:
        typer.echo(
            f"{o.name}: {o.status}  max abs {o.max_abs_error:.3g}  max rel "
            f"{o.max_rel_error:.3g}  ({o.tolerance})"
        )
    typer.echo(
        f"validation {result.status} ({result.strategy}, "
        f"{result.checked_fraction:.0%} checked, {result.wall_time_s:.2f} s)"
        + (f": {result.reason}" if result.reason else "")
    )
    if result.mismatch:
        _err(result.mismatch)
    if result.status != "passed":
        raise typer.Exit(1)


# ---------------------------------------------------------------------------- specs
def _fmt_flops(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e12:,.1f}"


@specs_app.command("list")
def specs_list() -> None:
    """List the bundled hardware specs (dense peaks, TFLOP/s)."""
    from solar.hw import Precision, list_hardware_specs

    header = (
        f"{'name':<18} {'fp32 vec':>9} {'tf32':>8} {'bf16':>9} {'fp8':>9} {'DRAM TB/s':>10}  device"
    )
    typer.echo(header)
    for s in list_hardware_specs():
        fp32 = _fmt_flops(s.peak_for(Precision.FP32, "vector"))
        tf32, bf16 = _fmt_flops(s.peak_for(Precision.TF32)), _fmt_flops(s.peak_for(Precision.BF16))
        fp8, bw = _fmt_flops(s.peak_for(Precision.FP8)), s.dram_bandwidth_bytes_per_s / 1e12
        typer.echo(
            f"{s.name:<18} {fp32:>9} {tf32:>8} {bf16:>9} {fp8:>9} {bw:>10.3f}  {s.display_name}"
        )


@specs_app.command("show")
def specs_show(
    name: Annotated[str, typer.Argument(help="Spec name (e.g. H100_SXM) or a YAML path.")],
) -> None:
    """Print one spec as YAML, with its sources."""
    from solar.hw import dump_hardware_spec, load_hardware_spec

    typer.echo(dump_hardware_spec(load_hardware_spec(name)), nl=False)


@app.command("calibrate")
def calibrate(
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the spec YAML.")],
    name: Annotated[str | None, typer.Option(help="Spec name (default local_<host>).")] = None,
    quick: Annotated[bool, typer.Option(help="Small, fast measurement.")] = False,
) -> None:
    """Measure this machine's bandwidth and matmul throughput; write a measured spec."""
    from solar.hw import calibrate_machine, dump_hardware_spec

    _err("measuring memory bandwidth and matmul throughput (takes ~10 s) ...")
    spec = calibrate_machine(name=name, quick=quick)
    output.write_text(dump_hardware_spec(spec), encoding="utf-8")
    _err(
        f"wrote {output}: {spec.dram_bandwidth_bytes_per_s / 1e9:.1f} GB/s, "
        + ", ".join(f"{p.value} {v / 1e9:.1f} GFLOP/s" for p, v in spec.vector_flops_per_s.items())
    )


# ---------------------------------------------------------------------------- analyze
def _llm_config(
    model: str | None,
    temperature: float | None,
    max_attempts: int | None,
    timeout: float | None,
    cache_dir: Path | None,
    no_cache: bool,
) -> object | None:
    """An LLMConfig when a model is configured (flag or SOLAR_LLM_MODEL), else None."""
    if not (model or os.environ.get("SOLAR_LLM_MODEL")):
        return None
    from solar.frontends.llm import LLMConfig

    fields: dict[str, object] = {"use_cache": not no_cache}
    for key, value in (
        ("model", model),
        ("temperature", temperature),
        ("max_attempts", max_attempts),
        ("timeout_s", timeout),
        ("cache_dir", cache_dir),
    ):
        if value is not None:
            fields[key] = value
    return LLMConfig(**fields)  # type: ignore[arg-type]


class _Progress:
    """Progress lines on stderr for steps slower than a second (silenced by --quiet)."""

    def __init__(self, quiet: bool, verbose: bool) -> None:
        import time

        self._clock = time.monotonic
        self.quiet, self.verbose = quiet, verbose
        self.start = self._clock()
        self.pending: str | None = None

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        now = self._clock()
        if self.verbose or now - self.start > 1.0:
            _err(f"[{now - self.start:6.1f}s] {message}")
        self.pending = message


@app.command("analyze")
def analyze(
    source: Annotated[Path, typer.Argument(help="Model file (.py) or IR file (.alir).")],
    arch: Annotated[
        list[str] | None, typer.Option("--arch", help="Hardware spec name or YAML (repeatable).")
    ] = None,
    precision: Annotated[
        str, typer.Option(help="Precision policy: default, strict-fp32, tf32, bf16, fp16, fp8.")
    ] = "default",
    cache: Annotated[
        str, typer.Option(help="warm (repeated runs; default) or cold (first run) cache.")
    ] = "warm",
    frontend: Annotated[str, typer.Option(help="auto, torch, jax, llm or ir.")] = "auto",
    ir: Annotated[
        Path | None, typer.Option("--ir", help="Analyse this hand-written IR against the model.")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Rebind a size: NAME=VALUE (repeatable).")
    ] = None,
    validate: Annotated[str, typer.Option(help="auto, full, sampled or off.")] = "auto",
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the JSON report here.")
    ] = None,
    save_ir: Annotated[Path | None, typer.Option(help="Write the IR here.")] = None,
    include_ir: Annotated[bool, typer.Option(help="Embed the IR text in the report.")] = False,
    format_: Annotated[str, typer.Option("--format", help="text or json (stdout).")] = "text",
    measured_ms: Annotated[
        float | None, typer.Option(help="A measured time (ms) from elsewhere.")
    ] = None,
    measure: Annotated[bool, typer.Option(help="Time the program on the local device.")] = False,
    entry: Annotated[str | None, typer.Option(help="module:function to analyse.")] = None,
    inputs: Annotated[Path | None, typer.Option(help="Inputs (.npz/.pt) for --entry.")] = None,
    reference: Annotated[
        Path | None, typer.Option(help="Reference .npz (inputs+outputs) for an .alir file.")
    ] = None,
    train: Annotated[bool, typer.Option(help="Analyse the module in training mode.")] = False,
    time_budget: Annotated[float, typer.Option(help="Validation time budget (s).")] = 60.0,
    model: Annotated[str | None, typer.Option(help="LLM model name (LLM frontend).")] = None,
    temperature: Annotated[float | None, typer.Option(help="LLM temperature.")] = None,
    max_attempts: Annotated[int | None, typer.Option(help="LLM repair attempts.")] = None,
    timeout: Annotated[float | None, typer.Option(help="LLM request timeout (s).")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="LLM cache directory.")] = None,
    no_cache: Annotated[bool, typer.Option(help="Do not read the LLM cache.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="All progress output.")] = False,
) -> None:
    """Analyse a program: frontend → validate → bounds → report."""
    from solar.pipeline import AnalyzeOptions
    from solar.pipeline import analyze as run_analyze
    from solar.report import render_text

    if frontend not in ("auto", "torch", "jax", "llm", "ir"):
        raise UsageError(
            f"--frontend must be auto, torch, jax, llm or ir, got `{frontend}`", code="E0904"
        )
    if validate not in ("auto", "full", "sampled", "off"):
        raise UsageError(
            f"--validate must be auto, full, sampled or off, got `{validate}`", code="E0904"
        )
    if cache not in ("warm", "cold"):
        raise UsageError(f"--cache must be warm or cold, got `{cache}`", code="E0904")
    if format_ not in ("text", "json"):
        raise UsageError(f"--format must be text or json, got `{format_}`", code="E0904")
    options = AnalyzeOptions(
        archs=tuple(arch or ["H100_SXM"]),
        precision=precision,
        cache=cache,  # type: ignore[arg-type]
        frontend=frontend,  # type: ignore[arg-type]
        ir_file=ir,
        sizes=_parse_sets(set_),
        validate=validate,  # type: ignore[arg-type]
        time_budget_s=time_budget,
        measured_ms=measured_ms,
        measure=measure,
        entry=entry,
        inputs_file=inputs,
        reference_file=reference,
        train=train,
        include_ir=include_ir,
        save_ir=save_ir,
        llm=_llm_config(model, temperature, max_attempts, timeout, cache_dir, no_cache),
    )
    report = run_analyze(source, options, progress=_Progress(quiet, verbose))
    text = report.to_json()
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    typer.echo(text if format_ == "json" else render_text(report), nl=False)
    if report.validation.status == "failed":
        raise typer.Exit(1)


def _lift(source: Path, frontend: str, set_: list[str] | None, entry: str | None):  # type: ignore[no-untyped-def]
    from solar.pipeline import AnalyzeOptions, lift_source

    options = AnalyzeOptions(
        frontend=frontend,  # type: ignore[arg-type]
        sizes=_parse_sets(set_),
        entry=entry,
        validate="off",
    )
    return lift_source(source, options)


@app.command("bounds")
def bounds(
    source: Annotated[Path, typer.Argument(help="IR file (.alir) or model file (.py).")],
    arch: Annotated[list[str] | None, typer.Option("--arch", help="Spec (repeatable).")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="NAME=VALUE (repeatable).")
    ] = None,
    precision: Annotated[str, typer.Option(help="Precision policy.")] = "default",
    frontend: Annotated[str, typer.Option(help="auto, torch, jax, llm or ir.")] = "auto",
    json_: Annotated[bool, typer.Option("--json", help="JSON on stdout.")] = False,
) -> None:
    """The three SOL bounds of a program on one or more devices (no validation)."""
    from solar.hw import load_hardware_spec
    from solar.pipeline import bound_arch
    from solar.report import dumps_deterministic, format_bytes, format_flops, format_time

    _front, graph, sizes = _lift(source, frontend, set_, None)
    rows = [
        bound_arch(graph, load_hardware_spec(a), precision=precision, sizes=sizes)
        for a in (arch or ["H100_SXM"])
    ]
    if json_:
        typer.echo(
            dumps_deterministic(
                {"sizes": sizes, "archs": [r.model_dump(mode="json") for r in rows]}
            ),
            nl=False,
        )
        return
    typer.echo("sizes: " + (", ".join(f"{k}={v}" for k, v in sorted(sizes.items())) or "-"))
    typer.echo(f"{'arch':<18} {'model':<12} {'bound':>12} {'FLOPs':>14} {'DRAM':>10}  bottleneck")
    for r in rows:
        for b in r.bounds:
            typer.echo(
                f"{r.arch:<18} {b.model:<12} {format_time(b.time_s):>12} "
                f"{format_flops(b.flops):>14} {format_bytes(b.dram_bytes):>10}  {b.bottleneck}"
            )


@app.command("compare")
def compare(
    source: Annotated[Path, typer.Argument(help="Model file or IR file.")],
    arch: Annotated[
        list[str] | None, typer.Option("--arch", help="Spec (repeatable; default all).")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="NAME=VALUE (repeatable).")
    ] = None,
    precision: Annotated[str, typer.Option(help="Precision policy.")] = "default",
    frontend: Annotated[str, typer.Option(help="auto, torch, jax, llm or ir.")] = "auto",
    entry: Annotated[str | None, typer.Option(help="module:function to analyse.")] = None,
) -> None:
    """Cross-platform table: the same program's bounds on several devices."""
    from solar.bounds import cross_platform
    from solar.hw import list_hardware_specs, load_hardware_spec
    from solar.report import format_time

    _front, graph, sizes = _lift(source, frontend, set_, entry)
    specs = [load_hardware_spec(a) for a in arch] if arch else list(list_hardware_specs())
    rows = cross_platform(graph, specs, precision_policy=precision, sizes=sizes)  # type: ignore[arg-type]
    by_dev: dict[str, dict[str, object]] = {}
    for row in rows:
        by_dev.setdefault(row.device, {})[row.model] = row
    typer.echo(
        f"{'device':<18} {'unfused':>12} {'fused':>12} {'cache-aware':>12}  fused bottleneck"
    )
    for dev, models in by_dev.items():
        cells = [
            format_time(models[m].time_s) if m in models else "-"  # type: ignore[attr-defined]
            for m in ("unfused", "fused", "cache-aware")
        ]
        fused = models.get("fused")
        typer.echo(
            f"{dev:<18} {cells[0]:>12} {cells[1]:>12} {cells[2]:>12}  "
            f"{getattr(fused, 'bottleneck', '-')}"
        )


@app.command("provision")
def provision(
    source: Annotated[Path, typer.Argument(help="Model file or IR file.")],
    target_ms: Annotated[float, typer.Option(help="Target run time in milliseconds.")],
    model: Annotated[
        str, typer.Option(help="Bound model: fused, cache-aware or unfused.")
    ] = "fused",
    arch: Annotated[
        list[str] | None, typer.Option("--arch", help="Devices to check (default all).")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="NAME=VALUE (repeatable).")
    ] = None,
    precision: Annotated[str, typer.Option(help="Precision policy.")] = "default",
    frontend: Annotated[str, typer.Option(help="auto, torch, jax, llm or ir.")] = "auto",
) -> None:
    """Inverse roofline: the bandwidth and throughput a device needs to hit a target time."""
    from solar.bounds import inverse_roofline
    from solar.hw import list_hardware_specs, load_hardware_spec
    from solar.report import format_bytes, format_time

    _front, graph, sizes = _lift(source, frontend, set_, None)
    specs = [load_hardware_spec(a) for a in arch] if arch else list(list_hardware_specs())
    inv = inverse_roofline(
        graph,
        target_time_s=target_ms / 1e3,
        model=model,  # type: ignore[arg-type]
        precision_policy=precision,  # type: ignore[arg-type]
        sizes=sizes,
        specs=specs,
    )
    typer.echo(f"target {format_time(inv.target_time_s)} under the {inv.model} model:")
    typer.echo(
        f"  DRAM bandwidth  >= {format_bytes(inv.required_dram_bandwidth_bytes_per_s)}/s "
        f"({format_bytes(inv.dram_bytes)} moved)"
    )
    for unit, need in sorted(inv.required_flops_per_s.items()):
        typer.echo(f"  {unit:<15} >= {need / 1e12:,.3f} TFLOP/s")
    typer.echo(f"{'device':<18} {'bound':>12}  meets target")
    for d in inv.devices:
        typer.echo(f"{d.device:<18} {format_time(d.time_s):>12}  {'yes' if d.meets else 'no'}")


@app.command("batch")
def batch(
    sources: Annotated[str, typer.Argument(help="Directory or glob of model/IR files.")],
    out: Annotated[Path, typer.Option("--out", help="Directory for reports and summaries.")] = Path(
        "solar-reports"
    ),
    arch: Annotated[list[str] | None, typer.Option("--arch", help="Spec (repeatable).")] = None,
    precision: Annotated[str, typer.Option(help="Precision policy.")] = "default",
    workers: Annotated[int, typer.Option(help="Parallel worker processes.")] = 2,
    validate: Annotated[str, typer.Option(help="auto, full, sampled or off.")] = "auto",
    resume: Annotated[bool, typer.Option(help="Skip files whose report is up to date.")] = False,
    time_budget: Annotated[float, typer.Option(help="Validation budget per file (s).")] = 60.0,
) -> None:
    """Analyse many files in parallel; one report each plus summary.csv/json."""
    from solar.batch import expand_sources, run_batch
    from solar.pipeline import AnalyzeOptions

    files = expand_sources(sources)
    options = AnalyzeOptions(
        archs=tuple(arch or ["H100_SXM"]),
        precision=precision,
        validate=validate,  # type: ignore[arg-type]
        time_budget_s=time_budget,
    )

    def progress(done: int, total: int, row: object) -> None:
        status = getattr(row, "status", "?")
        if status == "ok" and getattr(row, "error", None):
            status = "ok (resumed)"
        detail = getattr(row, "error", None) or ""
        detail = "" if status == "ok (resumed)" else detail
        bar = "#" * int(20 * done / total)
        _err(f"[{bar:<20}] {done}/{total} {status:<17} {getattr(row, 'file', '')} {detail}")

    summary = run_batch(files, options, out, workers=workers, resume=resume, progress=progress)
    ok = sum(r.status == "ok" for r in summary.rows)
    typer.echo(
        f"{ok}/{len(summary.rows)} ok, {summary.failed} failed; "
        f"summaries: {summary.csv_path} {summary.json_path}"
    )
    if summary.failed or any(r.status == "validation-failed" for r in summary.rows):
        raise typer.Exit(1)


# ---------------------------------------------------------------------------- reports
@app.command("schema")
def schema() -> None:
    """Print the JSON Schema of the analysis report."""
    from solar.report import report_json_schema

    typer.echo(report_json_schema(), nl=False)


@app.command("gate")
def gate(
    report: Annotated[Path, typer.Argument(help="Report JSON written by `solar analyze`.")],
    max_headroom: Annotated[
        float | None, typer.Option(help="Fail when measured/bound exceeds this.")
    ] = None,
    bound: Annotated[
        str, typer.Option(help="Bound model for headroom: fused, cache-aware or unfused.")
    ] = "fused",
    arch: Annotated[str | None, typer.Option(help="Only check this architecture.")] = None,
    baseline: Annotated[Path | None, typer.Option(help="Baseline report to compare with.")] = None,
    max_regression: Annotated[
        float | None, typer.Option(help="Fail when headroom grows more than PCT percent.")
    ] = None,
    min_coverage: Annotated[
        float | None, typer.Option(help="Fail when coverage is below PCT percent.")
    ] = None,
    require_validated: Annotated[bool, typer.Option(help="Fail unless validation passed.")] = False,
    summary: Annotated[
        Path | None,
        typer.Option(help="Write a markdown summary here (default $GITHUB_STEP_SUMMARY)."),
    ] = None,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
) -> None:
    """Pass or fail a CI job on headroom, regression, coverage and validation."""
    from solar.report import (
        GatePolicy,
        evaluate_gate,
        load_report,
        render_junit,
        render_markdown,
    )

    if bound not in ("fused", "cache-aware", "unfused"):
        raise UsageError(
            f"--bound must be fused, cache-aware or unfused, got `{bound}`", code="E0904"
        )
    policy = GatePolicy(
        bound=bound,
        arch=arch,
        max_headroom=max_headroom,
        max_regression_pct=max_regression,
        min_coverage_pct=min_coverage,
        require_validated=require_validated,
    )
    base = load_report(baseline) if baseline else None
    result = evaluate_gate(load_report(report), policy, baseline=base)
    for c in result.checks:
        typer.echo(f"{'PASS' if c.passed else 'FAIL'}  {c.name}: {c.detail}")
    typer.echo(f"gate {'passed' if result.passed else 'FAILED'} for {result.program}")
    target = summary or (
        Path(os.environ["GITHUB_STEP_SUMMARY"]) if os.environ.get("GITHUB_STEP_SUMMARY") else None
    )
    if target is not None:
        with target.open("a", encoding="utf-8") as fh:
            fh.write(render_markdown(result))
    if junit is not None:
        junit.write_text(render_junit(result), encoding="utf-8")
    if not result.passed:
        raise typer.Exit(1)


@app.command("plot")
def plot(
    report: Annotated[Path, typer.Argument(help="Report JSON written by `solar analyze`.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="PNG or SVG file.")],
    arch: Annotated[str | None, typer.Option(help="Architecture to draw (default: first).")] = None,
) -> None:
    """Draw a roofline chart and per-kernel bound bars."""
    from solar.report import load_report
    from solar.report.plot import plot_report

    path = plot_report(load_report(report), output, arch=arch)
    _err(f"wrote {path}")


@cache_app.command("clear")
def cache_clear(
    cache_dir: Annotated[Path | None, typer.Option(help="Cache directory.")] = None,
) -> None:
    """Delete every cached LLM translation."""
    from solar.frontends.llm import clear_cache, default_cache_dir

    n = clear_cache(cache_dir or default_cache_dir())
    _err(f"removed {n} cached translation(s)")


def main() -> None:
    """Console entry point: run the app, turning errors into diagnostics and exit codes."""
    logging.basicConfig(
        level=logging.INFO if os.environ.get("SOLAR_VERBOSE") else logging.WARNING,
        format="%(message)s",
        stream=sys.stderr,
    )
    try:
        # With standalone_mode=False, click returns typer.Exit's code instead of raising.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except SolarError as err:
        _err(err.render())
        sys.exit(err.exit_code)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except typer.Abort:
        _err("aborted")
        sys.exit(2)
    except KeyboardInterrupt:
        _err("interrupted")
        sys.exit(130)
    except Exception as err:  # noqa: BLE001 — the one boundary: anything unexpected -> exit 2
        show = getattr(err, "show", None)
        if callable(show) and hasattr(err, "exit_code"):  # click/typer usage errors
            show()
            sys.exit(2)
        _err(f"error[E0999]: internal error: {type(err).__name__}: {err}")
        _err("  = note: this is a bug in SOLAR; set SOLAR_DEBUG=1 to see the traceback")
        if os.environ.get("SOLAR_DEBUG"):
            traceback.print_exc()
        sys.exit(2)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        typer.echo(f"solar {__version__}")
        raise typer.Exit(0)
