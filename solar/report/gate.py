"""The CI gate: decide pass/fail from a report, and render the decision.

Contract: ``(Report, GatePolicy, baseline Report | None) -> GateResult``. Pure: the
CLI reads files and writes the markdown/JUnit renderings. A bound above a measured
time (a *violation*) always fails the gate: it means a formula, a byte count or a
spec is wrong, never noise.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from pydantic import ValidationError

from solar.diagnostics import ReportError
from solar.report.schema import ArchBounds, Report

__all__ = [
    "GateCheck",
    "GatePolicy",
    "GateResult",
    "evaluate_gate",
    "load_report",
    "render_junit",
    "render_markdown",
]


@dataclass(frozen=True, slots=True)
class GatePolicy:
    """Thresholds of the gate; ``None`` disables a check."""

    bound: str = "fused"
    arch: str | None = None
    max_headroom: float | None = None
    max_regression_pct: float | None = None
    min_coverage_pct: float | None = None
    require_validated: bool = False


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One check and its outcome."""

    name: str
    passed: bool
    detail: str


@dataclass(frozen=True, slots=True)
class GateResult:
    """All checks; the gate passes when every check passes."""

    program: str
    checks: tuple[GateCheck, ...]

    @property
    def passed(self) -> bool:
        """True when no check failed."""
        return all(c.passed for c in self.checks)


def load_report(path: Path) -> Report:
    """Read and validate a report JSON file.

    Raises:
        ReportError: missing file (E0701), bad JSON (E0702) or schema mismatch (E0703).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"no such report: {path}", code="E0701") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ReportError(f"cannot read report {path}: {err}", code="E0701") from None
    except json.JSONDecodeError as err:
        raise ReportError(
            f"{path} is not JSON: {err.msg} at line {err.lineno} column {err.colno}", code="E0702"
        ) from None
    try:
        return Report.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReportError(
            f"{path} is not a SOLAR report: {where}: {first['msg']}",
            code="E0703",
            notes=(f"{err.error_count()} schema error(s)",),
        ) from None


def _arch_rows(report: Report, arch: str | None) -> tuple[ArchBounds, ...]:
    if arch is None:
        return report.archs
    rows = tuple(a for a in report.archs if a.arch.lower() == arch.lower())
    if not rows:
        known = ", ".join(a.arch for a in report.archs) or "none"
        raise ReportError(f"report has no architecture `{arch}` (has: {known})", code="E0704")
    return rows


def _bound_time(arch: ArchBounds, model: str) -> float | None:
    for b in arch.bounds:
        if b.model == model:
            return b.time_s
    return None


def _headroom_checks(report: Report, policy: GatePolicy) -> list[GateCheck]:
    checks = []
    for arch in _arch_rows(report, policy.arch):
        for h in arch.headroom:
            if h.violation:
                checks.append(
                    GateCheck(
                        f"violation:{arch.arch}:{h.model}",
                        False,
                        f"{h.model} bound on {arch.arch} is ABOVE the measured time "
                        f"(measured/bound = {h.ratio:.3f}): a formula, byte count or spec is wrong",
                    )
                )
        if policy.max_headroom is None:
            continue
        match = [h for h in arch.headroom if h.model == policy.bound]
        if not match:
            checks.append(
                GateCheck(
                    f"headroom:{arch.arch}",
                    False,
                    f"no measurement for {arch.arch}: cannot check headroom "
                    "(run analyze with --measure or --measured-ms)",
                )
            )
            continue
        ratio = match[0].ratio
        checks.append(
            GateCheck(
                f"headroom:{arch.arch}",
                ratio <= policy.max_headroom,
                f"measured / {policy.bound} bound on {arch.arch} = {ratio:.2f}x "
                f"(limit {policy.max_headroom:.2f}x)",
            )
        )
    return checks


def _regression_checks(report: Report, baseline: Report, policy: GatePolicy) -> list[GateCheck]:
    assert policy.max_regression_pct is not None
    checks = []
    base_by_arch = {a.arch: a for a in baseline.archs}
    for arch in _arch_rows(report, policy.arch):
        old = base_by_arch.get(arch.arch)
        if old is None:
            checks.append(GateCheck(f"regression:{arch.arch}", True, "not in baseline; skipped"))
            continue
        new_h = next((h.ratio for h in arch.headroom if h.model == policy.bound), None)
        old_h = next((h.ratio for h in old.headroom if h.model == policy.bound), None)
        if new_h is not None and old_h is not None:
            what, new, prev = "headroom", new_h, old_h
        else:
            what = f"{policy.bound} bound"
            new, prev = (
                _bound_time(arch, policy.bound) or 0.0,
                _bound_time(old, policy.bound) or 0.0,
            )
        change = (new / prev - 1.0) * 100.0 if prev > 0 else 0.0
        checks.append(
            GateCheck(
                f"regression:{arch.arch}",
                change <= policy.max_regression_pct,
                f"{what} on {arch.arch}: {prev:.4g} -> {new:.4g} ({change:+.1f}%, "
                f"limit +{policy.max_regression_pct:.1f}%)",
            )
        )
    return checks


def evaluate_gate(
    report: Report, policy: GatePolicy, *, baseline: Report | None = None
) -> GateResult:
    """Run every enabled check of ``policy`` against ``report``.

    Raises:
        ReportError: the policy names an architecture the report lacks (E0704), or a
            regression check is asked for without a baseline (E0705).
    """
    checks = _headroom_checks(report, policy)
    if policy.max_regression_pct is not None:
        if baseline is None:
            raise ReportError("--max-regression needs --baseline", code="E0705")
        checks += _regression_checks(report, baseline, policy)
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
    return GateResult(report.program, tuple(checks))


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
