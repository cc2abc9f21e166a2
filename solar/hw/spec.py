"""The hardware-spec schema: one frozen, validated `HardwareSpec` per device.

Contract: a `HardwareSpec` is plain data about one device (peaks, memory system,
provenance). Construction validates the schema (unknown keys are rejected) and
then the *sanity rules* in `sanity_problems`; a spec that exists is therefore
internally consistent:

* every throughput figure is **dense** (no 2:4 structured sparsity). Sparse
  figures may be recorded in `HardwareSpec.sparse_peak_flops_per_s` for audit, but
  are never returned by `HardwareSpec.peak_for`;
* every figure is positive, finite and within a plausible range for its unit,
  which catches unit slips (GB/s written where bytes/s belongs, GHz for Hz);
* tensor peaks obey the orderings that hold on every real device
  (``tf32 <= bf16 <= fp16``, ``bf16 <= fp8 <= fp4``), which catches most
  sparse-as-dense mix-ups;
* every figure is supported by at least one cited `Source`.

The bound models divide by these peaks, so figures must be *upper* estimates of
what the hardware can do: a bound computed with them is then never too high. A
bundled figure is the larger of the vendor's value and its derivation from units x
rate x clock (docs/bounds.md, "Hardware figures"; checked figure by figure in
tests/hw/test_figures.py). Where a figure is an estimate, the spec's ``notes`` say so.

Loading specs from YAML (and turning validation failures into
`solar.diagnostics.HardwareSpecError`) lives in `solar.hw.loader`; this module
raises pydantic's `ValidationError` like any pydantic model.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Literal, Self, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = [
    "FIGURE_FIELDS",
    "SANITY_ERROR_TYPE",
    "ComputeUnit",
    "DeviceKind",
    "HardwareSpec",
    "Precision",
    "Source",
    "sanity_problems",
]


class Precision(StrEnum):
    """Numeric formats a peak can be quoted for (operand precision).

    ``int8`` peaks are integer ops/s but are stored alongside FLOP/s: the bound
    models count one multiply-add as two operations either way.
    """

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    FP4 = "fp4"


ComputeUnit: TypeAlias = Literal["tensor", "vector"]
"""``tensor``: matrix units (Tensor Cores, Matrix Cores, MXUs); ``vector``: SIMT/vector ALUs."""

DeviceKind: TypeAlias = Literal["gpu", "tpu", "cpu", "soc"]

SANITY_ERROR_TYPE = "hardware_spec_sanity"
"""The pydantic error ``type`` raised when a spec breaks a sanity rule."""

FIGURE_FIELDS: tuple[str, ...] = (
    "peak_flops_per_s",
    "vector_flops_per_s",
    "sparse_peak_flops_per_s",
    "dram_capacity_bytes",
    "dram_bandwidth_bytes_per_s",
    "l2_capacity_bytes",
    "l2_bandwidth_bytes_per_s",
    "smem_per_sm_bytes",
    "register_file_per_sm_bytes",
    "tensor_memory_per_sm_bytes",
    "sm_count",
    "clock_hz_tensor",
    "clock_hz_vector",
)
"""Fields holding figures, as spelled in spec files (``peak_flops_per_s`` is the
`HardwareSpec.tensor_flops_per_s` table); each populated one must be cited by a `Source`."""

_PEAK_FIELDS = ("peak_flops_per_s", "vector_flops_per_s", "sparse_peak_flops_per_s")

# Plausible ranges per unit, wide enough for a phone SoC and a rack-scale part
# alike. A value outside them is almost always a unit slip (e.g. 3.35 for a
# bandwidth meant in bytes/s), so it is rejected instead of silently used.
_RANGES: dict[str, tuple[float, float]] = {
    "flops": (1e9, 1e18),
    "bandwidth": (1e9, 1e15),
    "dram_capacity": (1e8, 1e14),
    "onchip_bytes": (1e3, 1e11),
    "clock": (1e8, 1e10),
    "count": (1, 1e6),
}

_SCALAR_RANGES: dict[str, str] = {
    "dram_capacity_bytes": "dram_capacity",
    "dram_bandwidth_bytes_per_s": "bandwidth",
    "l2_capacity_bytes": "onchip_bytes",
    "l2_bandwidth_bytes_per_s": "bandwidth",
    "smem_per_sm_bytes": "onchip_bytes",
    "register_file_per_sm_bytes": "onchip_bytes",
    "tensor_memory_per_sm_bytes": "onchip_bytes",
    "sm_count": "count",
    "clock_hz_tensor": "clock",
    "clock_hz_vector": "clock",
}

# Note [Tensor peak orderings]
# Only orderings that hold on every real device are enforced; each pair reads
# "peak[lo] <= peak[hi]". TF32 never beats BF16/FP16, FP16 is never slower than
# BF16, and halving the operand width never lowers the rate. INT8 is left out:
# Blackwell Ultra cut INT8 below FP8, so no INT8 ordering is universal.
# These catch a sparse figure entered as dense only where it overtakes a dense
# neighbour (a 2x BF16 above the dense FP16). A 2x TF32 merely equals the dense
# BF16 and passes; the dense-vs-sparse check below and the published-figure
# tests catch that kind.
_TENSOR_ORDER: tuple[tuple[Precision, Precision], ...] = (
    (Precision.TF32, Precision.BF16),
    (Precision.TF32, Precision.FP16),
    (Precision.BF16, Precision.FP16),
    (Precision.BF16, Precision.FP8),
    (Precision.FP16, Precision.FP8),
    (Precision.FP8, Precision.FP4),
)
_VECTOR_ORDER: tuple[tuple[Precision, Precision], ...] = ((Precision.FP64, Precision.FP32),)

_PRECISION_NAMES = frozenset(p.value for p in Precision)

# Published figures are rounded (989.4 vs 1,979 = 2 x 989.5), so comparisons
# between figures allow this relative slack.
_REL_TOL = 1e-3


class Source(BaseModel):
    """A citation backing some of a spec's figures.

    Attributes:
        url: the primary document (datasheet, whitepaper, product page). For a
            measured spec, where the measurement came from (tool, host).
        edition: datasheet edition or date, plus the copy actually read
            ("seen via ...") when that differs from ``url``.
        fields: the figures this source supports: a field name
            (``dram_bandwidth_bytes_per_s``), one entry of a peak table
            (``peak_flops_per_s.bf16``), or ``*`` for every figure.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(min_length=1)
    edition: str = Field(min_length=1)
    fields: tuple[str, ...] = Field(min_length=1)


class HardwareSpec(BaseModel):
    """Peak throughput, memory system and provenance of one device.

    Throughput figures are DENSE and per second (FLOP/s, or op/s for int8);
    bandwidths are bytes/s; capacities are bytes. Optional figures are ``None``
    where no citable value exists; consumers must then assume the most
    optimistic value (e.g. an unknown L2 bandwidth means on-chip traffic is
    free), so that bounds stay lower bounds.

    Attributes:
        name: canonical id, e.g. ``H100_SXM``; bundled specs live in
            ``hardware_specs/<name lowercased>.yaml``.
        display_name: human-readable product name.
        vendor: e.g. ``NVIDIA``.
        kind: device class.
        measured: True for specs produced by calibration on a local machine,
            False for datasheet specs.
        tensor_flops_per_s: dense peaks of the matrix unit (Tensor/Matrix Cores, MXU);
            spelled ``peak_flops_per_s`` in spec files (and in sources and
            diagnostics), which predate the name.
        vector_flops_per_s: dense peaks of the vector/SIMT units (CUDA cores).
        sparse_peak_flops_per_s: 2:4-sparse matrix-unit peaks as printed by the
            vendor; informational only, never used as a peak.
        dram_capacity_bytes: device memory capacity as printed (GB = 1e9 B).
        dram_bandwidth_bytes_per_s: peak device-memory bandwidth.
        l2_capacity_bytes: capacity of the last on-chip cache level shared by all
            SMs/CUs (L2 on NVIDIA, Infinity Cache on MI300X); on a device without a
            hardware cache (TPU), the on-chip memory that can hold data between
            kernels (VMEM + SMEM). An upper estimate either way.
        l2_bandwidth_bytes_per_s: upper estimate of that cache's bandwidth.
        smem_per_sm_bytes: per-SM/CU SRAM that can hold operands (NVIDIA: the
            unified L1/shared-memory array, an upper bound on the shared-memory
            carve-out; AMD: LDS plus vector L1).
        register_file_per_sm_bytes: register file per SM/CU.
        tensor_memory_per_sm_bytes: Tensor Memory per SM (Blackwell ``tcgen05``: 128
            lanes x 512 columns x 32 bit = 256 KiB), the matrix-unit accumulator storage
            beside registers and shared memory; unset on devices without it.
        sm_count: number of SMs (NVIDIA) or CUs (AMD).
        clock_hz_tensor: clock the matrix-unit peaks are quoted at.
        clock_hz_vector: clock the vector peaks are quoted at.
        notes: derivations, estimates and caveats, one per entry.
        sources: citations; at least one.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    display_name: str = Field(min_length=1)
    vendor: str = Field(min_length=1)
    kind: DeviceKind
    measured: bool = False
    tensor_flops_per_s: dict[Precision, float] = Field(alias="peak_flops_per_s")
    vector_flops_per_s: dict[Precision, float]
    sparse_peak_flops_per_s: dict[Precision, float] = Field(default_factory=dict)
    dram_capacity_bytes: float
    dram_bandwidth_bytes_per_s: float
    l2_capacity_bytes: float | None = None
    l2_bandwidth_bytes_per_s: float | None = None
    smem_per_sm_bytes: float | None = None
    register_file_per_sm_bytes: float | None = None
    tensor_memory_per_sm_bytes: float | None = None
    sm_count: int | None = None
    clock_hz_tensor: float | None = None
    clock_hz_vector: float | None = None
    notes: tuple[str, ...] = ()
    sources: tuple[Source, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_sanity(self) -> Self:
        problems = sanity_problems(self)
        if problems:
            summary = "; ".join(f"{loc}: {msg}" for loc, msg in problems)
            raise PydanticCustomError(
                SANITY_ERROR_TYPE,
                "{summary}",
                {"summary": summary, "problems": tuple(problems)},
            )
        return self

    def __hash__(self) -> int:
        """Hash on identifying fields (consistent with field-wise equality)."""
        # The peak tables are dicts, so pydantic's field-tuple hash would fail.
        # Equal specs share these fields, which is all a hash must guarantee.
        return hash((self.name, self.measured, self.dram_bandwidth_bytes_per_s))

    def peak_for(self, precision: Precision, unit: ComputeUnit = "tensor") -> float | None:
        """Return the dense peak for ``precision`` on ``unit``.

        Sparse figures are never returned.

        Args:
            precision: operand precision.
            unit: ``"tensor"`` for the matrix unit, ``"vector"`` for SIMT/vector ALUs.

        Returns:
            The peak in FLOP/s (op/s for int8), or ``None`` if the device has no
            published peak for that precision on that unit.
        """
        table = self.tensor_flops_per_s if unit == "tensor" else self.vector_flops_per_s
        return table.get(precision)

    @property
    def onchip_capacity_bytes(self) -> float | None:
        """Total on-chip storage: registers, SM SRAM and Tensor Memory over all SMs, plus L2.

        ``None`` (unknown: callers treat it as unlimited) unless every part is known:
        a sum of the known parts would understate the capacity, and the bounds that
        divide by it (pebble game, reduction barriers) would then be too high.

        Returns:
            Bytes, or ``None``.
        """
        parts = (self.register_file_per_sm_bytes, self.smem_per_sm_bytes,
                 self.l2_capacity_bytes)
        if self.sm_count is None or any(p is None for p in parts):
            return None
        regs, smem, l2 = (float(p) for p in parts if p is not None)
        tmem = float(self.tensor_memory_per_sm_bytes or 0.0)  # unset: the device has none
        return self.sm_count * (regs + smem + tmem) + l2


# Spec-file key -> attribute (the two differ where a field has an alias).
_ATTRIBUTES: dict[str, str] = {
    info.alias or name: name for name, info in HardwareSpec.model_fields.items()
}


def _figure(spec: HardwareSpec, key: str) -> object:
    """The value of the field a spec-file key names."""
    return getattr(spec, _ATTRIBUTES[key])


def sanity_problems(spec: HardwareSpec) -> list[tuple[str, str]]:
    """List the sanity rules ``spec`` breaks (see the module docstring).

    Args:
        spec: a spec whose fields already passed schema validation.

    Returns:
        ``(field path, message)`` pairs, e.g.
        ``("peak_flops_per_s.tf32", "exceeds peak_flops_per_s.bf16 ...")``;
        empty when the spec is sane.
    """
    return [
        *_range_problems(spec),
        *_order_problems(spec),
        *_sparse_problems(spec),
        *_consistency_problems(spec),
        *_source_problems(spec),
    ]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _range_problems(spec: HardwareSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    checks: list[tuple[str, float, str]] = []
    for field in _PEAK_FIELDS:
        table = cast("dict[Precision, float]", _figure(spec, field))
        checks.extend((f"{field}.{p}", v, "flops") for p, v in table.items())
    for field, kind in _SCALAR_RANGES.items():
        value = cast("float | None", _figure(spec, field))
        if value is not None:
            checks.append((field, value, kind))
    for loc, value, kind in checks:
        lo, hi = _RANGES[kind]
        if not math.isfinite(value) or value <= 0:
            problems.append((loc, f"must be positive and finite, got {_fmt(value)}"))
        elif not lo <= value <= hi:
            problems.append(
                (loc, f"{_fmt(value)} is outside [{_fmt(lo)}, {_fmt(hi)}]; check the unit")
            )
    return problems


def _order_problems(spec: HardwareSpec) -> list[tuple[str, str]]:
    # See Note [Tensor peak orderings].
    problems: list[tuple[str, str]] = []
    tables = (
        ("peak_flops_per_s", spec.tensor_flops_per_s, _TENSOR_ORDER),
        ("sparse_peak_flops_per_s", spec.sparse_peak_flops_per_s, _TENSOR_ORDER),
        ("vector_flops_per_s", spec.vector_flops_per_s, _VECTOR_ORDER),
    )
    for field, table, order in tables:
        for lo, hi in order:
            if lo in table and hi in table and table[lo] > table[hi] * (1 + _REL_TOL):
                problems.append(
                    (
                        f"{field}.{lo}",
                        f"{_fmt(table[lo])} exceeds {field}.{hi} = {_fmt(table[hi])}; "
                        "a sparse figure entered as dense?",
                    )
                )
    return problems


def _sparse_problems(spec: HardwareSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for precision, sparse in spec.sparse_peak_flops_per_s.items():
        loc = f"peak_flops_per_s.{precision}"
        dense = spec.tensor_flops_per_s.get(precision)
        if dense is None:
            problems.append((loc, "a sparse figure is recorded but no dense one"))
        elif dense >= sparse * (1 - _REL_TOL):
            problems.append(
                (
                    loc,
                    f"dense {_fmt(dense)} is not below the sparse figure {_fmt(sparse)}; "
                    "dense peaks must exclude 2:4 sparsity",
                )
            )
    return problems


def _consistency_problems(spec: HardwareSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    l2_bw = spec.l2_bandwidth_bytes_per_s
    if l2_bw is not None and l2_bw < spec.dram_bandwidth_bytes_per_s:
        problems.append(
            (
                "l2_bandwidth_bytes_per_s",
                f"{_fmt(l2_bw)} is below the DRAM bandwidth "
                f"{_fmt(spec.dram_bandwidth_bytes_per_s)}; it must be an upper estimate",
            )
        )
    l2_cap = spec.l2_capacity_bytes
    if l2_cap is not None and l2_cap >= spec.dram_capacity_bytes:
        problems.append(("l2_capacity_bytes", "is not smaller than dram_capacity_bytes"))
    return problems


def _source_problems(spec: HardwareSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    cited: set[str] = set()
    for i, source in enumerate(spec.sources):
        if not spec.measured and not source.url.startswith(("https://", "http://")):
            problems.append((f"sources.{i}.url", "a datasheet spec must cite an http(s) URL"))
        for entry in source.fields:
            head, _, precision = entry.partition(".")
            if entry == "*":
                cited.add("*")
            elif head not in FIGURE_FIELDS or (
                precision and (head not in _PEAK_FIELDS or precision not in _PRECISION_NAMES)
            ):
                problems.append((f"sources.{i}.fields", f"`{entry}` names no figure"))
            else:
                cited.add(entry)
    if "*" in cited:
        return problems
    for field in FIGURE_FIELDS:
        value = _figure(spec, field)
        if isinstance(value, dict):
            missing = [p for p in value if field not in cited and f"{field}.{p}" not in cited]
            problems.extend((f"{field}.{p}", "no source cites this figure") for p in missing)
        elif value is not None and field not in cited:
            problems.append((field, "no source cites this figure"))
    return problems
