"""Reports: the versioned JSON schema, rows built from bounds, text rendering, the CI
gate and plots."""

from __future__ import annotations

from solar.report.gate import (
    GateCheck,
    GatePolicy,
    GateResult,
    check_policy,
    evaluate_gate,
    load_report,
    render_junit,
    render_markdown,
)
from solar.report.render import format_bytes, format_flops, format_time, render_text
from solar.report.rows import build_arch_bounds, build_bound_result, build_kernel_row
from solar.report.schema import (
    REPORT_SCHEMA_VERSION,
    ArchBounds,
    BoundResult,
    CoverageInfo,
    FrontendInfo,
    Headroom,
    InputInfo,
    IRInfo,
    KernelRow,
    KernelTiming,
    Measurement,
    OutputCheck,
    Report,
    ToolInfo,
    UncoveredOpInfo,
    ValidationInfo,
    dumps_deterministic,
    report_json_schema,
)
from solar.report.sections import (
    UncoveredRow,
    coverage_info,
    skipped_validation,
    validation_info,
)

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "ArchBounds",
    "BoundResult",
    "CoverageInfo",
    "FrontendInfo",
    "GateCheck",
    "GatePolicy",
    "GateResult",
    "Headroom",
    "IRInfo",
    "InputInfo",
    "KernelRow",
    "KernelTiming",
    "Measurement",
    "OutputCheck",
    "Report",
    "ToolInfo",
    "UncoveredOpInfo",
    "UncoveredRow",
    "ValidationInfo",
    "build_arch_bounds",
    "build_bound_result",
    "build_kernel_row",
    "coverage_info",
    "dumps_deterministic",
    "check_policy",
    "evaluate_gate",
    "format_bytes",
    "format_flops",
    "format_time",
    "load_report",
    "render_junit",
    "render_markdown",
    "render_text",
    "report_json_schema",
    "skipped_validation",
    "validation_info",
]
