"""The versioned JSON report: pydantic models at the output boundary.

Contract: `Report` is what `solar analyze` writes and `solar gate`/`solar plot`
read. Field names carry units. `REPORT_SCHEMA_VERSION` changes whenever a field
changes meaning; additive fields bump the minor part. The JSON Schema
(`report_json_schema()`) is committed as ``docs/report.schema.json`` and a test
fails when it drifts. docs/report.md documents every field.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from solar.options import BoundModel, FrontendName
from solar.report.distributed import DistributedInfo

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "ArchBounds",
    "BoundResult",
    "BreakdownRow",
    "CoverageInfo",
    "FrontendInfo",
    "Fp32Check",
    "Headroom",
    "InputInfo",
    "IRInfo",
    "IndependentFlops",
    "KernelRow",
    "KernelTiming",
    "Measurement",
    "OutputCheck",
    "PhaseArchBounds",
    "PhaseBound",
    "PhaseInfo",
    "Report",
    "ToolInfo",
    "TrainingInfo",
    "UncoveredOpInfo",
    "ValidationInfo",
    "dumps_deterministic",
    "report_json_schema",
]

REPORT_SCHEMA_VERSION = "1.7"

_FROZEN = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class ToolInfo(BaseModel):
    """Which SOLAR produced the report."""

    model_config = _FROZEN
    name: Literal["solar"] = "solar"
    version: str


class InputInfo(BaseModel):
    """The analysed source file."""

    model_config = _FROZEN
    path: str
    sha256: str
    entry: str | None = None


class FrontendInfo(BaseModel):
    """How the program was turned into IR."""

    model_config = _FROZEN
    name: FrontendName
    captured_with: str = Field(description="e.g. 'fake-tensor dispatch', 'real tensors', 'jaxpr'")
    notes: tuple[str, ...] = ()


class IRInfo(BaseModel):
    """The IR the bounds were computed from."""

    model_config = _FROZEN
    sha256: str
    path: str | None = None
    kernels: int
    statements: int
    alias_kernels: int = Field(default=0, description="kernels that only alias (views): free")
    dead_kernels: int = Field(
        default=0, description="kernels no output depends on: removed before bounding"
    )
    copy_kernels: int = Field(
        default=0,
        description="kernels that only copy a view: their readers read through them, and "
        "they are removed before bounding (1.3)",
    )
    duplicate_kernels: int = Field(
        default=0,
        description="kernels that compute the same values as an earlier kernel: their "
        "readers read the earlier result, and they are removed before bounding (1.3)",
    )
    text: str | None = None


class UncoveredOpInfo(BaseModel):
    """An op SOLAR could not lower; it is reported, never counted as free."""

    model_config = _FROZEN
    op: str
    count: int
    bytes_share: float = Field(description="share of the program's tensor bytes touched by it")
    counted_flops: float | None = Field(
        None, description="FLOPs the independent counter assigns to these calls (1.1)"
    )


class IndependentFlops(BaseModel):
    """SOLAR's FLOPs against an independent count over the same forward (1.1)."""

    model_config = _FROZEN
    counter: str = Field(description="e.g. 'torch.utils.flop_counter.FlopCounterMode'")
    total_flops: float = Field(description="the counter's FLOPs over the whole forward")
    uncovered_flops: float = Field(description="of those, in ops SOLAR did not lower")
    covered_flops: float = Field(description="total_flops - uncovered_flops")
    padding_flops: float = Field(
        0.0, description="of covered_flops, multiply-adds over zero padding (not work)"
    )
    masked_flops: float = Field(
        0.0, description="(1.7) of covered_flops, contraction FLOPs a constant mask hides "
        "(masked-out attention scores: not work)"
    )
    solar_flops: float = Field(description="the report's `flops` (SOLAR's covered work)")
    shortfall: bool = Field(
        description="solar_flops < (covered_flops - padding_flops - masked_flops) "
        "* (1 - tolerance)"
    )
    tolerance: float
    unseen_ops: tuple[str, ...] = Field(
        default=(),
        description="lowered ops the counter has no formula for: their work is in "
        "solar_flops but not in covered_flops (fused internal ops first)",
    )


class CoverageInfo(BaseModel):
    """How much of the program the IR covers."""

    model_config = _FROZEN
    complete: bool
    covered_bytes_fraction: float
    ops_total: int
    uncovered: tuple[UncoveredOpInfo, ...] = ()
    uncovered_flops_fraction: float | None = Field(
        None, description="share of the independently counted FLOPs in uncovered ops (1.1)"
    )
    independent_flops: IndependentFlops | None = None


class OutputCheck(BaseModel):
    """Comparison of one output."""

    model_config = _FROZEN
    name: str
    passed: bool
    max_abs_error: float | None
    max_rel_error: float | None
    rtol: float
    atol: float


class Fp32Check(BaseModel):
    """The fp32 comparison that a float64 re-check followed (Note [Float64 re-check]
    in solar/pipeline/validation.py): kept, with why it was not accepted."""

    model_config = _FROZEN
    status: Literal["failed"] = "failed"
    max_abs_error: float | None
    max_rel_error: float | None
    outputs_checked: int
    failed_outputs: tuple[OutputCheck, ...]
    mismatch: str
    not_accepted: str


class ValidationInfo(BaseModel):
    """What was validated, exactly."""

    model_config = _FROZEN
    status: Literal["passed", "failed", "skipped", "error"]
    strategy: str
    sizes: dict[str, int]
    fraction_checked: float
    outputs: tuple[OutputCheck, ...] = ()
    wall_time_s: float = 0.0
    reason: str | None = None
    dtype: Literal["as-captured", "float64"] = Field(
        default="as-captured",
        description="the precision of the check `outputs` describe: the program's own "
        "dtypes, or float64 (the IR widened to f64 against the program run in float64)",
    )
    fp32_check: Fp32Check | None = Field(
        default=None, description="the fp32 comparison a float64 re-check followed"
    )


class KernelRow(BaseModel):
    """One kernel of the unfused model on one architecture."""

    model_config = _FROZEN
    name: str
    flops: float
    bytes: float
    unit: str
    precision: str
    time_s: float
    bottleneck: Literal["compute", "memory"]
    arithmetic_intensity_flops_per_byte: float
    measured_s: float | None = Field(
        default=None, description="profiled time of the ops matched to this kernel, on this device"
    )
    dram_bytes: float | None = Field(
        default=None, description="of `bytes`, those charged at DRAM bandwidth (the rest: L2)"
    )
    memory_time_s: float | None = Field(
        default=None, description="its memory term: the larger of its DRAM and L2 times"
    )
    source: str | None = Field(
        default=None,
        description="the user's source line that produced it, `file.py:42` (the innermost "
        "frame outside torch, JAX and SOLAR); null when the frontend does not know it",
    )


class BreakdownRow(BaseModel):
    """The unfused kernels of one module (or of one op type), summed."""

    model_config = _FROZEN
    name: str = Field(
        description="dotted module path (`modules`) or op name (`op_types`); '' is the "
        "program's own top level"
    )
    kernels: int
    flops: float
    bytes: float = Field(description="all bytes its kernels move (DRAM and L2)")
    time_s: dict[str, float] = Field(
        description="the sum of its kernels' unfused bounds, per architecture"
    )
    bottleneck: dict[str, Literal["compute", "memory"]] = Field(
        description="per architecture, the roof of the kernels carrying most of `time_s`"
    )


class BoundResult(BaseModel):
    """One bound model on one architecture."""

    model_config = _FROZEN
    model: BoundModel
    time_s: float
    compute_time_s: float
    compute_time_s_by_unit: dict[str, float]
    memory_time_s: float
    flops: float
    dram_bytes: float
    l2_bytes: float = 0.0
    arithmetic_intensity_flops_per_byte: float
    bottleneck: Literal["compute", "memory"]
    assumptions: tuple[str, ...] = ()


class Headroom(BaseModel):
    """Measured time over a bound.

    ``violation`` when a bound that holds for every implementation (fused, cache-aware)
    exceeds the measurement. The unfused bound holds only for kernel-by-kernel
    execution, so a ratio below 1 there means the implementation fuses kernels.
    """

    model_config = _FROZEN
    model: BoundModel
    ratio: float
    violation: bool


class ArchBounds(BaseModel):
    """All bound models for one architecture."""

    model_config = _FROZEN
    arch: str
    display_name: str
    spec_measured: bool = False
    precision_policy: str
    cache_assumption: str
    peak_flops_per_s: dict[str, float] = Field(
        description="dense peaks used as roofs, keyed 'tensor:bf16', 'vector:fp32', ..."
    )
    dram_bandwidth_bytes_per_s: float
    l2_bandwidth_bytes_per_s: float | None = None
    bounds: tuple[BoundResult, ...]
    kernels: tuple[KernelRow, ...] = ()
    headroom: tuple[Headroom, ...] = ()
    bf16_bounds_s: dict[str, float] | None = Field(
        default=None,
        description="each model's bound under `--precision bf16` (the program cast to bf16: "
        "fp32 tensors at 2 bytes, contractions at the bf16 tensor peak), for the hint; null "
        "under a bf16/fp16/fp8 policy",
    )


class KernelTiming(BaseModel):
    """One kernel of a profiled run (torch.profiler), matched to an IR kernel if possible."""

    model_config = _FROZEN
    op: str = Field(description="the profiler's op name, e.g. 'aten::addmm'")
    index: int = Field(description="its position among the run's timed ops (0-based)")
    time_ms: float = Field(description="self device time per run (CUDA) or self CPU time")
    kernel: str | None = Field(default=None, description="the IR kernel it was matched to")


class Measurement(BaseModel):
    """A measured time of the source program."""

    model_config = _FROZEN
    source: Literal["measured", "user"]
    median_ms: float
    min_ms: float | None = None
    max_ms: float | None = None
    trials: int = 1
    device: str | None = None
    arch: str | None = Field(
        default=None,
        description="the analysed architecture the measurement is of (headroom is computed "
        "against it alone); null when it is none of them",
    )
    headroom_note: str | None = Field(
        default=None, description="why no headroom is computed, when arch is null"
    )
    kernels: tuple[KernelTiming, ...] = Field(
        default=(), description="per-kernel times of one profiled run, in execution order"
    )


class PhaseBound(BaseModel):
    """One bound model of one training-step phase on one architecture."""

    model_config = _FROZEN
    model: BoundModel
    time_s: float
    flops: float
    dram_bytes: float
    bottleneck: Literal["compute", "memory"]


class PhaseArchBounds(BaseModel):
    """A phase's bounds on one architecture (same models and policy as the step's)."""

    model_config = _FROZEN
    arch: str
    bounds: tuple[PhaseBound, ...]


class PhaseInfo(BaseModel):
    """One phase of a training step, bounded as if it ran alone (docs/training.md)."""

    model_config = _FROZEN
    phase: Literal["forward", "backward", "optimizer"]
    kernels: int
    flops: float
    fused_dram_bytes: float = Field(description="cold compulsory bytes of the phase alone")
    archs: tuple[PhaseArchBounds, ...]


class TrainingInfo(BaseModel):
    """A training step's phases and memory (``--train``; docs/training.md)."""

    model_config = _FROZEN
    loss: str
    optimizer: str
    phases: tuple[PhaseInfo, ...]
    parameter_bytes: int
    optimizer_state_bytes: int
    gradient_bytes: int
    input_bytes: int
    saved_activation_bytes: int = Field(
        description="values the forward writes and the backward reads, at the analysed sizes"
    )
    peak_bytes: int = Field(
        description="lower estimate of the step's peak: parameters, optimizer state, inputs "
        "and saved activations resident at the end of the forward"
    )


class Report(BaseModel):
    """A SOLAR analysis report."""

    model_config = _FROZEN
    schema_version: str = REPORT_SCHEMA_VERSION
    tool: ToolInfo
    input: InputInfo
    frontend: FrontendInfo
    program: str
    ir: IRInfo
    sizes: dict[str, int] = Field(
        description="the size binding analysed: an IR file's sizes, or a model file's "
        "module-level int constants with --set applied"
    )
    symbolic_sizes: tuple[str, ...] = Field(
        default=(), description="the sizes flops_formula and fused_bytes_formula are symbolic in"
    )
    coverage: CoverageInfo
    validation: ValidationInfo
    flops: float
    flops_formula: str
    fused_dram_bytes: float
    fused_bytes_formula: str
    archs: tuple[ArchBounds, ...]
    measurement: Measurement | None = None
    training: TrainingInfo | None = None
    distributed: DistributedInfo | None = None
    parameters: int | None = Field(
        default=None,
        description="elements of the parameters and buffers the program reads; null for "
        "programs without any (IR files say `param`)",
    )
    parameter_bytes: int | None = None
    modules: tuple[BreakdownRow, ...] = Field(
        default=(),
        description="FLOPs, bytes and bound per module (nn.Module path, JAX name scope), "
        "each summing every kernel under it (fvcore's by_module)",
    )
    op_types: tuple[BreakdownRow, ...] = Field(
        default=(), description="the same per op type (the op a kernel was lowered from)"
    )
    warnings: tuple[str, ...] = ()

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, floats to 9 significant digits."""
        return dumps_deterministic(self.model_dump(mode="json"))


def _round_floats(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, dict):
        return {k: _round_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round_floats(v) for v in value]
    return value


def dumps_deterministic(data: Any) -> str:
    """Serialise JSON with sorted keys and fixed float precision."""
    return json.dumps(_round_floats(data), sort_keys=True, indent=2, allow_nan=False) + "\n"


def report_json_schema() -> str:
    """The JSON Schema of `Report`, deterministic text."""
    return json.dumps(Report.model_json_schema(), sort_keys=True, indent=2) + "\n"
