"""Reading a report file and checking what the schema cannot: its semantics.

Contract: ``path -> Report`` (`read_report`), failing closed with a coded `ReportError`
(exit 1). A report SOLAR wrote always passes; a hand-edited, truncated, foreign or
future one never reaches the gate or the plot:

=====  ==================================================================================
E0701  the file is missing or unreadable
E0702  not strict JSON: syntax, ``NaN``/``Infinity`` (SOLAR never writes them), a number
       that overflows, an integer over 4300 digits, nesting too deep
E0703  not a SOLAR report (the JSON Schema rejects it, strictly: ``"2.5"`` or ``true``
       where a number goes, ``1`` where a boolean goes are rejected, as SOLAR never
       writes them)
E0706  ``schema_version`` missing or of another major version than this SOLAR reads
E0708  a headroom entry disagrees with the measurement and bounds it is derived from
       (ratio not finite and positive, ratio ≠ measured / bound, ``violation`` ≠ the rule)
E0709  a figure is out of its range (a negative time, byte or FLOP count, a coverage or
       fraction outside [0, 1], a non-positive size, bandwidth or measured time)
=====  ==================================================================================

`recomputed_headroom` is the one definition of headroom the gate uses: measured time
over bound, computed from the report's measurement and bounds, never read from the
file's ``headroom`` entries (which `read_report` only checks for consistency).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from solar.diagnostics import ReportError, UsageError
from solar.files import read_text
from solar.report.schema import REPORT_SCHEMA_VERSION, ArchBounds, Report

__all__ = ["check_report", "is_violation", "read_report", "recomputed_headroom", "schema_major"]

# Reports round floats to 9 significant digits; a recomputed ratio may differ by that.
_RATIO_RTOL = 1e-6


def schema_major(version: object) -> int | None:
    """The major part of a ``"MAJOR.MINOR"`` schema version, or ``None`` if malformed.

    >>> schema_major("1.0"), schema_major("99.3"), schema_major("one"), schema_major(1.0)
    (1, 99, None, None)
    """
    if not isinstance(version, str):
        return None
    major, _, minor = version.partition(".")
    if not (major.isdigit() and minor.isdigit()) or len(major) > 6:
        return None
    return int(major)


def _reject_constant(name: str) -> float:
    raise ValueError(f"`{name}` is not a number SOLAR writes (reports never hold NaN or ∞)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} overflows a 64-bit float")
    return value


def _parse_json(path: Path) -> Any:
    try:  # a FIFO, a device or a file over 32 MiB is refused unread (Note [Guarded reads])
        text = read_text(path)
    except UsageError as err:
        if err.code == "E0901":
            raise ReportError(f"no such report: {path}", code="E0701") from None
        reason = err.message.removeprefix(f"cannot read {path}: ")
        raise ReportError(f"cannot read report {path}: {reason}", code="E0701") from None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as err:
        raise ReportError(
            f"{path} is not JSON: {err.msg} at line {err.lineno} column {err.colno}", code="E0702"
        ) from None
    except RecursionError:
        raise ReportError(f"{path} is not a report: JSON nested too deeply", code="E0702") from None
    except ValueError as err:  # our hooks, or an integer over Python's digit limit
        reason = str(err).split(";")[0]
        raise ReportError(f"{path} is not strict JSON: {reason}", code="E0702") from None


def read_report(path: Path) -> Report:
    """Read a report JSON file and check its schema, version and semantics.

    Raises:
        ReportError: E0701, E0702, E0703, E0706, E0708 or E0709 (module docstring).
    """
    data = _parse_json(path)
    if not isinstance(data, dict):
        raise ReportError(f"{path} is not a SOLAR report: not a JSON object", code="E0703")
    if "schema_version" not in data:  # the model would default it
        raise ReportError(
            f"{path} is not a SOLAR report: schema_version: Field required", code="E0703"
        )
    version, expected = data["schema_version"], schema_major(REPORT_SCHEMA_VERSION)
    if schema_major(version) != expected:
        raise ReportError(
            f"{path}: schema_version `{str(version)[:40]}` is not readable by this SOLAR "
            f"(it reads {expected}.x)",
            code="E0706",
            notes=("re-create the report with this version of `solar analyze`",),
        )
    try:  # strict: a string or a boolean where a number goes is refused, never coerced
        report = Report.model_validate_json(json.dumps(data), strict=True)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ReportError(
            f"{path} is not a SOLAR report: {where}: {first['msg']}",
            code="E0703",
            notes=(f"{err.error_count()} schema error(s)",),
        ) from None
    check_report(report, origin=str(path))
    return report


def check_report(report: Report, *, origin: str) -> None:
    """Check the semantics of a report (however it was obtained).

    Args:
        report: the report.
        origin: what to call it in messages (its path).

    Raises:
        ReportError: E0709 a figure out of range; E0708 inconsistent headroom.
    """
    note = ("SOLAR never writes such a value; was the report edited?",)
    problem = next(_range_problems(report), None)
    if problem is not None:
        raise ReportError(f"{origin}: {problem}", code="E0709", notes=note)
    problem = next(_headroom_problems(report), None)
    if problem is not None:
        raise ReportError(f"{origin}: {problem}", code="E0708", notes=note)


def _nonneg(field: str, value: float) -> Iterator[str]:
    if not (math.isfinite(value) and value >= 0):
        yield f"{field} = {value:g} is not a finite non-negative number"


def _fraction(field: str, value: float) -> Iterator[str]:
    if not 0.0 <= value <= 1.0:
        yield f"{field} = {value:g} is outside [0, 1]"


def _positive(field: str, value: float) -> Iterator[str]:
    if not (math.isfinite(value) and value > 0):
        yield f"{field} = {value:g} is not a finite positive number"


def _range_problems(report: Report) -> Iterator[str]:
    """Every figure outside its range, as ``field = value is ...`` (the first one is shown)."""
    yield from _fraction("coverage.covered_bytes_fraction", report.coverage.covered_bytes_fraction)
    yield from _nonneg("coverage.ops_total", report.coverage.ops_total)
    for i, op in enumerate(report.coverage.uncovered):
        yield from _fraction(f"coverage.uncovered[{i}].bytes_share", op.bytes_share)
        yield from _nonneg(f"coverage.uncovered[{i}].count", op.count)
    yield from _fraction("validation.fraction_checked", report.validation.fraction_checked)
    yield from _nonneg("validation.wall_time_s", report.validation.wall_time_s)
    for name, value in (*report.sizes.items(), *report.validation.sizes.items()):
        yield from _positive(f"size {name}", value)
    yield from _nonneg("flops", report.flops)
    yield from _nonneg("fused_dram_bytes", report.fused_dram_bytes)
    m = report.measurement
    if m is not None:
        yield from _positive("measurement.median_ms", m.median_ms)
        yield from _positive("measurement.trials", m.trials)
        for field, extreme in (("min_ms", m.min_ms), ("max_ms", m.max_ms)):
            if extreme is not None:
                yield from _nonneg(f"measurement.{field}", extreme)
    for a in report.archs:
        yield from _arch_range_problems(a)


def _arch_range_problems(a: ArchBounds) -> Iterator[str]:
    yield from _positive(f"{a.arch}: dram_bandwidth_bytes_per_s", a.dram_bandwidth_bytes_per_s)
    for unit_name, peak in a.peak_flops_per_s.items():
        yield from _positive(f"{a.arch}: peak_flops_per_s[{unit_name}]", peak)
    for b in a.bounds:
        for field in (
            "time_s",
            "compute_time_s",
            "memory_time_s",
            "flops",
            "dram_bytes",
            "l2_bytes",
            "arithmetic_intensity_flops_per_byte",
        ):
            yield from _nonneg(f"{a.arch}: {b.model} bound {field}", getattr(b, field))
    for k in a.kernels:
        for field in ("flops", "bytes", "time_s"):
            yield from _nonneg(f"{a.arch}: kernel {k.name} {field}", getattr(k, field))


def _headroom_problems(report: Report) -> Iterator[str]:
    """Headroom entries that the measurement and bounds do not produce."""
    for a in report.archs:
        expected = recomputed_headroom(report, a)
        for h in a.headroom:
            where = f"{a.arch}: {h.model} headroom"
            if not (math.isfinite(h.ratio) and h.ratio > 0):
                yield f"{where} ratio {h.ratio:g} is not a finite positive number"
                continue
            if h.model not in expected:
                yield f"{where} has no measurement or no positive bound to come from"
                continue
            ratio = expected[h.model]
            if not math.isclose(h.ratio, ratio, rel_tol=_RATIO_RTOL):
                yield f"{where} ratio {h.ratio:.6g} is not measured / bound = {ratio:.6g}"
            elif h.violation != is_violation(h.model, ratio):
                yield f"{where} says violation={h.violation} but its ratio is {ratio:.6g}"


def is_violation(model: str, ratio: float) -> bool:
    """A bound that holds for every implementation (fused, cache-aware) above the
    measured time (schema.Headroom)."""
    return ratio < 1.0 and model != "unfused"


def recomputed_headroom(report: Report, arch: ArchBounds) -> dict[str, float]:
    """Measured time / bound per model on ``arch``, from the measurement and the bounds.

    Empty without a measurement, or when the measurement is not of ``arch`` (another
    device, or none of the report's: ``arch`` null); a model whose bound is 0 has no ratio.
    """
    m = report.measurement
    if m is None or m.arch is None or m.arch.lower() != arch.arch.lower():
        return {}
    measured_s = m.median_ms / 1e3
    return {b.model: measured_s / b.time_s for b in arch.bounds if b.time_s > 0}
