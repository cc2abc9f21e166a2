"""``solar schema``, ``gate`` and ``plot``: reading and checking reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from solar.cli.app import app, echo_err
from solar.options import BoundModel

__all__ = ["gate", "plot", "schema"]


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
    bound: Annotated[BoundModel, typer.Option(help="Bound model for headroom.")] = "fused",
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
    echo_err(f"wrote {path}")
