"""The CI gate: decide pass/fail from a report, and render the decision.

Contract: ``(Report, GatePolicy, baseline Report | None) -> GateResult``. Pure: the
CLI reads files (`load_report`, which checks schema, version and semantics: see
`solar.report.check`) and writes the markdown/JUnit renderings. The gate fails
closed: anything it cannot check is an error, never a pass.

* A bound above a measured time (a *violation*) always fails the gate: it means a
  formula, a byte count or a spec is wrong, never noise. Headroom and violations are
  recomputed from the measurement and the bounds (`recomputed_headroom`), never read
  from the file.
* Errors (exit 1 unless noted):

=====  ==================================================================================
E0704  ``--arch`` names an architecture the report lacks
E0705  ``--max-regression`` without ``--baseline`` or the reverse (usage, exit 2)
E0707  the report has no architectures: there is nothing to gate
E0710  the report (or the baseline) lacks a bound the gate needs: ``--bound``, and with
       a measurement the fused and cache-aware bounds the violation check reads
E0711  the baseline is not a baseline of this analysis: another program or input file
       (unless ``allow_input_change``), entry point, sizes, architecture or precision
       policy
E0905  a threshold is not a finite number in its range (usage, exit 2)
=====  ==================================================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from solar.diagnostics import ReportError, UsageError, printable
from solar.options import BoundModel
from solar.report.check import check_report, is_violation, read_report, recomputed_headroom
from solar.report.schema import ArchBounds, BoundResult, Report

__all__ = [
    "GateCheck",
    "GatePolicy",
    "GateResult",
    "check_policy",
    "evaluate_gate",
    "load_report",
    "render_junit",
    "render_markdown",
]

_VIOLATION_MODELS: tuple[BoundModel, ...] = ("fused", "cache-aware")


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """Thresholds of the gate; ``None`` disables a check.

    ``allow_input_change`` accepts a baseline analysed from another version of the
    input file (its sha256 differs, and its name may: the program is named after it);
    everything else about its identity must match.
    """

    bound: BoundModel = "fused"
    arch: str | None = None
    max_headroom: float | None = None
    max_regression_pct: float | None = None
    min_coverage_pct: float | None = None
    require_validated: bool = False
    allow_input_change: bool = False


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One check and its outcome."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True, slots=True)
class GateResult:
    """All checks; the gate passes when every check passes (and there is one)."""

    program: str
    checks: tuple[GateCheck, ...]

    @property
    def passed(self) -> bool:
        """True when at least one check ran and none failed."""
        return bool(self.checks) and all(c.passed for c in self.checks)


def load_report(path: Path) -> Report:
    """Read a report JSON file, checking its schema, version and semantics.

    Raises:
        ReportError: E0701-E0703, E0706, E0708, E0709 (`solar.report.check`).
    """
    return read_report(path)


def check_policy(policy: GatePolicy, *, with_baseline: bool) -> None:
    """Check the thresholds before any report is read.

    Raises:
        UsageError: E0905 a threshold out of range; E0705 a regression limit without a
            baseline, or the reverse.
    """

    def require(option: str, value: float | None, ok: bool, rule: str) -> None:
        if value is not None and not (math.isfinite(value) and ok):
            raise UsageError(f"{option} must be {rule}, got {value:g}", code="E0905")

    h, r, c = policy.max_headroom, policy.max_regression_pct, policy.min_coverage_pct
    require("--max-headroom", h, h is not None and h > 0, "a positive number")
    require("--max-regression", r, True, "a finite percentage")
    require("--min-coverage", c, c is not None and 0 <= c <= 100, "a percentage in [0, 100]")
    if r is not None and not with_baseline:
        raise UsageError("--max-regression needs --baseline", code="E0705")
    if r is None and with_baseline:
        raise UsageError(
            "--baseline needs --max-regression (a baseline alone checks nothing)", code="E0705"
        )


def _arch_rows(report: Report, arch: str | None) -> tuple[ArchBounds, ...]:
    if not report.archs:
        raise ReportError(
            f"report for {report.program} has no architectures: nothing to gate", code="E0707"
        )
    if arch is None:
        return report.archs
    rows = tuple(a for a in report.archs if a.arch.lower() == arch.lower())
    if not rows:
        known = ", ".join(a.arch for a in report.archs)
        raise ReportError(f"report has no architecture `{arch}` (has: {known})", code="E0704")
    return rows


def _bound(arch: ArchBounds, model: str) -> BoundResult | None:
    return next((b for b in arch.bounds if b.model == model), None)


def _measured_on(report: Report, arch: ArchBounds) -> bool:
    """True when the report's measurement applies to ``arch`` (Measurement.arch)."""
    m = report.measurement
    return m is not None and m.arch is not None and m.arch.lower() == arch.arch.lower()


def _require_bounds(report: Report, arch: ArchBounds, policy: GatePolicy, what: str) -> None:
    """E0710 unless ``arch`` holds every bound the gate reads."""
    needed: list[str] = [policy.bound]
    if _measured_on(report, arch):
        needed += [m for m in _VIOLATION_MODELS if m not in needed]
    missing = [m for m in needed if _bound(arch, m) is None]
    if missing:
        raise ReportError(
            f"{what} has no {' or '.join(missing)} bound for {arch.arch}: the gate cannot check it",
            code="E0710",
        )


def _headroom_checks(
    report: Report, rows: tuple[ArchBounds, ...], policy: GatePolicy
) -> list[GateCheck]:
    checks = []
    for arch in rows:
        ratios = recomputed_headroom(report, arch)
        for model, ratio in ratios.items():
            if is_violation(model, ratio):
                checks.append(
                    GateCheck(
                        f"violation:{arch.arch}:{model}",
                        False,
                        f"{model} bound on {arch.arch} is ABOVE the measured time "
                        f"(measured/bound = {ratio:.3f}): a formula, byte count or spec is wrong",
                    )
                )
        if policy.max_headroom is None:
            continue
        asked = ratios.get(policy.bound)
        m = report.measurement
        if asked is None and m is not None and not _measured_on(report, arch):
            # measured on another device: no headroom to check, nothing failed
            checks.append(GateCheck(
                f"headroom:{arch.arch}", True,
                f"skipped: {m.headroom_note or f'the measurement is not of {arch.arch}'}"))
            continue
        if asked is None:
            bound = _bound(arch, policy.bound)
            why = (
                f"the {policy.bound} bound on {arch.arch} is 0: headroom is undefined"
                if _measured_on(report, arch) and bound is not None and bound.time_s == 0
                else f"no measurement for {arch.arch}: cannot check headroom "
                "(run analyze with --measure or --measured-ms)"
            )
            checks.append(GateCheck(f"headroom:{arch.arch}", False, why))
            continue
        checks.append(
            GateCheck(
                f"headroom:{arch.arch}",
                asked <= policy.max_headroom,
                f"measured / {policy.bound} bound on {arch.arch} = {asked:.2f}x "
                f"(limit {policy.max_headroom:.2f}x)",
            )
        )
    return checks


def _check_identity(report: Report, baseline: Report, policy: GatePolicy) -> None:
    """E0711 unless ``baseline`` is an analysis of the same program, sizes and entry."""
    differ = []
    # a program is named after its file: another version of it may be another file's
    if report.program != baseline.program and not policy.allow_input_change:
        differ.append(
            f"program `{baseline.program}` vs `{report.program}` (pass --allow-input-change "
            "to compare two versions of the program)"
        )
    if report.input.entry != baseline.input.entry:
        differ.append(f"entry point {baseline.input.entry} vs {report.input.entry}")
    if report.sizes != baseline.sizes:
        old, new = baseline.sizes, report.sizes
        keys = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
        shown = (f"{k} {old.get(k, '-')} vs {new.get(k, '-')}" for k in keys[:6])
        differ.append("sizes " + ", ".join(shown))
    if report.input.sha256 != baseline.input.sha256 and not policy.allow_input_change:
        differ.append(
            f"input file sha256 {baseline.input.sha256[:12]}… vs {report.input.sha256[:12]}… "
            "(pass --allow-input-change to compare two versions of the program)"
        )
    if differ:
        raise ReportError(
            "the baseline is not an analysis of the same program: " + "; ".join(differ),
            code="E0711",
            notes=("a regression check compares like with like; re-create the baseline",),
        )


def _regression_checks(
    report: Report, baseline: Report, rows: tuple[ArchBounds, ...], policy: GatePolicy
) -> list[GateCheck]:
    limit = policy.max_regression_pct
    assert limit is not None
    _check_identity(report, baseline, policy)
    base_by_arch = {a.arch.lower(): a for a in baseline.archs}
    checks = []
    for arch in rows:
        old = base_by_arch.get(arch.arch.lower())
        if old is None:
            known = ", ".join(a.arch for a in baseline.archs) or "none"
            raise ReportError(
                f"the baseline has no architecture {arch.arch} (has: {known})", code="E0711"
            )
        if old.precision_policy != arch.precision_policy:
            raise ReportError(
                f"the baseline's precision policy on {arch.arch} is {old.precision_policy}, "
                f"this report's {arch.precision_policy}",
                code="E0711",
            )
        _require_bounds(baseline, old, policy, "the baseline")
        new_h = recomputed_headroom(report, arch).get(policy.bound)
        old_h = recomputed_headroom(baseline, old).get(policy.bound)
        if new_h is not None and old_h is not None:
            what, new, prev = "headroom", new_h, old_h
        else:
            what = f"{policy.bound} bound"
            new = _bound(arch, policy.bound).time_s  # type: ignore[union-attr]
            prev = _bound(old, policy.bound).time_s  # type: ignore[union-attr]
        if prev > 0:
            change = (new / prev - 1.0) * 100.0
        else:
            change = 0.0 if new == prev else math.inf
        checks.append(
            GateCheck(
                f"regression:{arch.arch}",
                change <= limit,
                f"{what} on {arch.arch}: {prev:.4g} -> {new:.4g} ({change:+.1f}%, "
                f"limit {limit:+.1f}%)",
            )
        )
    return checks


def evaluate_gate(
    report: Report, policy: GatePolicy, *, baseline: Report | None = None
) -> GateResult:
    """Run every enabled check of ``policy`` against ``report``.

    Raises:
        UsageError: a threshold out of range (E0905); a baseline without a regression
            limit or the reverse (E0705).
        ReportError: a report or baseline that fails its semantic checks (E0708,
            E0709), has no architectures (E0707), lacks a needed bound (E0710) or the
            ``--arch`` (E0704), or a baseline of another analysis (E0711).
    """
    check_policy(policy, with_baseline=baseline is not None)
    check_report(report, origin="the report")
    rows = _arch_rows(report, policy.arch)
    for arch in rows:
        _require_bounds(report, arch, policy, "the report")
    checks = _headroom_checks(report, rows, policy)
    if baseline is not None:
        check_report(baseline, origin="the baseline")
        checks += _regression_checks(report, baseline, rows, policy)
    if policy.min_coverage_pct is not None:
        pct = report.coverage.covered_bytes_fraction * 100.0
        checks.append(
            GateCheck(
                "coverage",
                pct >= policy.min_coverage_pct,
                f"coverage {pct:.1f}% (minimum {policy.min_coverage_pct:.1f}%)",
            )
        )
    if policy.require_validated:
        v = report.validation
        checks.append(
            GateCheck(
                "validated",
                v.status == "passed",
                f"validation {v.status} ({v.strategy})" + (f": {v.reason}" if v.reason else ""),
            )
        )
    if not checks:
        checks.append(GateCheck("report", True, "report is well formed; no thresholds given"))
    # names come from files: a newline or a bidi override must not forge or reverse a line
    shown = (replace(c, name=printable(c.name), detail=printable(c.detail)) for c in checks)
    return GateResult(printable(report.program), tuple(shown))


def render_markdown(result: GateResult) -> str:
    """A markdown summary for a CI job page."""
    verdict = "PASSED" if result.passed else "FAILED"
    lines = [f"### SOLAR gate: {result.program} — {verdict}", "", "| check | result | detail |"]
    lines.append("|---|---|---|")
    for c in result.checks:
        lines.append(f"| {c.name} | {'pass' if c.passed else '**FAIL**'} | {c.detail} |")
    return "\n".join(lines) + "\n"


def render_junit(result: GateResult) -> str:
    """JUnit XML with one test case per check."""
    from xml.sax.saxutils import escape, quoteattr  # pulls urllib/http/ssl: ~0.07 s

    failures = sum(not c.passed for c in result.checks)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuite name={quoteattr('solar-gate:' + result.program)} "
        f'tests="{len(result.checks)}" failures="{failures}">',
    ]
    for c in result.checks:
        out.append(f'  <testcase classname="solar.gate" name={quoteattr(c.name)}>')
        if not c.passed:
            out.append(f"    <failure message={quoteattr(c.detail)}>{escape(c.detail)}</failure>")
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"
