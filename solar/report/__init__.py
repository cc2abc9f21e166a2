"""Reports: the versioned JSON schema, text rendering, the CI gate and plots."""

from __future__ import annotations

from solar.report.gate import (
    GateCheck,
    GatePolicy,
    GateResult,
    evaluate_gate,
    load_report,
    render_junit,
    render_markdown,
)
from solar.report.render import format_bytes, format_flops, format_time, render_text
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
    Measurement,
    OutputError,
    Report,
    ToolInfo,
    UncoveredOpInfo,
    ValidationInfo,
    dumps_deterministic,
    report_json_schema,
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
    "Measurement",
    "OutputError",
    "Report",
    "ToolInfo",
    "UncoveredOpInfo",
    "ValidationInfo",
    "dumps_deterministic",
    "evaluate_gate",
    "format_bytes",
    "format_flops",
    "format_time",
    "load_report",
    "render_junit",
    "render_markdown",
    "render_text",
    "report_json_schema",
]
