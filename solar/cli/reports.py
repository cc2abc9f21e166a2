"""``solar schema``, ``gate`` and ``plot``: reading and checking reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from solar.cli.app import app, echo_err, examples
from solar.options import BoundModel

__all__ = ["gate", "plot", "schema"]


@app.command("schema", epilog=examples("solar schema > report.schema.json"))
def schema() -> None:
    """Print the JSON Schema of the analysis report."""
    from solar.report import report_json_schema

    typer.echo(report_json_schema(), nl=False)


@app.command(
    "gate",
    epilog=examples(
        "solar gate report.json --max-headroom 3 --bound fused --require-validated",
        "solar gate report.json --baseline main.json --max-regression 10 --junit gate.xml",
        exit_codes="Exit codes: 0 gate passed; 1 gate failed or the report is rejected; 2 usage.",
    ),
)
def gate(
    report: Annotated[Path, typer.Argument(help="Report JSON written by `solar analyze`.")],
    max_headroom: Annotated[
        float | None, typer.Option(help="Fail when measured/bound exceeds this.")
    ] = None,
    bound: Annotated[BoundModel, typer.Option(help="Bound model for headroom.")] = "fused",
    arch: Annotated[str | None, typer.Option(help="Only check this architecture.")] = None,
    baseline: Annotated[Path | None, typer.Option(help="Baseline report to compare with.")] = None,
    max_regression: Annotated[
        float | None, typer.Option(help="Fail when headroom grows more than PCT percent.")
    ] = None,
    allow_input_change: Annotated[
        bool,
        typer.Option(
            "--allow-input-change",
            help="Accept a baseline analysed from another version of the input file "
            "(program, sizes and architectures must still match)."
        ),
    ] = False,
    min_coverage: Annotated[
        float | None, typer.Option(help="Fail when coverage is below PCT percent.")
    ] = None,
    require_validated: Annotated[
        bool, typer.Option("--require-validated", help="Fail unless validation passed.")
    ] = False,
    summary: Annotated[
        Path | None,
        typer.Option(help="Append a markdown summary here (default $GITHUB_STEP_SUMMARY)."),
    ] = None,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
) -> None:
    """Pass or fail a CI job on headroom, regression, coverage and validation.

    The report (and baseline) are checked for schema, version and semantics first; the
    summary and JUnit files are written before the verdict is printed, so a write
    error (E0940, E0941) never follows a "gate passed" line.
    """
    from solar.files import append_atomic, prepare_output, write_atomic
    from solar.report import (
        GatePolicy,
        check_policy,
        evaluate_gate,
        load_report,
        render_junit,
        render_markdown,
    )

    policy = GatePolicy(
        bound=bound,
        arch=arch,
        max_headroom=max_headroom,
        max_regression_pct=max_regression,
        min_coverage_pct=min_coverage,
        require_validated=require_validated,
        allow_input_change=allow_input_change,
    )
    check_policy(policy, with_baseline=baseline is not None)  # before any file is read
    target = summary or (
        Path(os.environ["GITHUB_STEP_SUMMARY"]) if os.environ.get("GITHUB_STEP_SUMMARY") else None
    )
    for out in (target, junit):
        if out is not None:
            prepare_output(out)  # a bad path fails before any work
    loaded = load_report(report)
    base = load_report(baseline) if baseline else None
    result = evaluate_gate(loaded, policy, baseline=base)
    if target is not None:
        append_atomic(target, render_markdown(result))
    if junit is not None:
        write_atomic(junit, render_junit(result))
    for c in result.checks:
        typer.echo(f"{'PASS' if c.passed else 'FAIL'}  {c.name}: {c.detail}")
    typer.echo(f"gate {'passed' if result.passed else 'FAILED'} for {result.program}")
    if not result.passed:
        raise typer.Exit(1)


@app.command(
    "plot",
    epilog=examples(
        "solar analyze samples/torch/gpt_block.py -o r.json && solar plot r.json -o roofline.png",
        "solar plot r.json -o roofline.svg --arch A100_SXM_80GB",
    ),
)
def plot(
    report: Annotated[Path, typer.Argument(help="Report JSON written by `solar analyze`.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="PNG, SVG or PDF file.")],
    arch: Annotated[str | None, typer.Option(help="Architecture to draw (default: first).")] = None,
) -> None:
    """Draw a roofline chart and per-kernel bound bars."""
    from solar.report import load_report
    from solar.report.plot import plot_report

    path = plot_report(load_report(report), output, arch=arch)
    echo_err(f"wrote {path}")
