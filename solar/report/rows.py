"""Report rows from bound values: one `ArchBounds` per device.

Contract: ``(HardwareSpec, bounds, ...) -> ArchBounds``, pure. The bounds are
computed elsewhere (`solar.bounds.compute_bound_set`, composed by
`solar.pipeline`); this module only turns typed bound values into the report's
JSON-shaped models: the roofs of the spec, one `BoundResult` per model, the
unfused model's kernels, the cache assumption and the headroom of a measurement.

Report conventions (docs/report.md): arithmetic intensity is FLOPs per DRAM byte,
or per L2 byte when a warm cache leaves no DRAM traffic, and 0 when nothing moves
(JSON has no infinity); a kernel without FLOPs has precision ``-`` and its work
class as unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from solar.report.schema import ArchBounds, BoundResult, Headroom, KernelRow, Measurement

if TYPE_CHECKING:
    from solar.bounds import Bound, CacheState, KernelBound, Pipe, PrecisionPolicy
    from solar.hw import HardwareSpec

__all__ = ["build_arch_bounds", "build_bound_result", "build_kernel_row"]


def _intensity(flops: float, moved_bytes: float) -> float:
    # Imported here: `import solar.report` (gate, plot, schema) stays free of the
    # bounds' numpy/sympy imports; callers of this module hold bounds already.
    from solar.bounds import arithmetic_intensity

    return arithmetic_intensity(flops, moved_bytes)


def _roofs(spec: HardwareSpec) -> dict[str, float]:
    roofs = {f"tensor:{p.value}": v for p, v in spec.tensor_flops_per_s.items()}
    roofs.update({f"vector:{p.value}": v for p, v in spec.vector_flops_per_s.items()})
    return dict(sorted(roofs.items()))


def _labelled(values: Mapping[Pipe, float]) -> dict[str, float]:
    from solar.bounds import pipe_labels  # as in `_intensity`

    return pipe_labels(values)


def build_bound_result(bound: Bound) -> BoundResult:
    """One bound model as a report row.

    Args:
        bound: the bound.

    Returns:
        The row; intensity per DRAM byte, or per L2 byte without DRAM traffic.
    """
    return BoundResult(
        model=bound.model,
        time_s=bound.time_s,
        compute_time_s=bound.compute_time_s,
        compute_time_s_by_unit=_labelled(bound.compute_time_s_by_pipe),
        memory_time_s=bound.memory_time_s,
        flops=bound.flops,
        dram_bytes=bound.dram_bytes,
        l2_bytes=bound.l2_bytes,
        arithmetic_intensity_flops_per_byte=_intensity(
            bound.flops, bound.dram_bytes or bound.l2_bytes
        ),
        bottleneck=bound.bottleneck,
        assumptions=tuple(bound.assumptions),
    )


def build_kernel_row(kernel: KernelBound) -> KernelRow:
    """One kernel of the unfused model as a report row.

    Args:
        kernel: the kernel's share of the unfused bound.

    Returns:
        The row: its busiest pipe's unit and precision (its work class and ``-``
        without FLOPs), all bytes it moves, and FLOPs per byte.
    """
    total_bytes = kernel.dram_bytes + kernel.l2_bytes
    pipe = kernel.pipe
    return KernelRow(
        name=kernel.name,
        flops=kernel.flops,
        bytes=total_bytes,
        unit=kernel.work_class if pipe is None else pipe.unit,
        # the label says an emulation too (`3xtf32`: fp32-accurate at a third of TF32)
        precision="-" if pipe is None else pipe.precision_label,
        time_s=kernel.time_s,
        bottleneck=kernel.bottleneck,
        arithmetic_intensity_flops_per_byte=_intensity(kernel.flops, total_bytes),
        dram_bytes=kernel.dram_bytes,
        memory_time_s=kernel.memory_time_s,
    )


def _headroom(
    bounds: Sequence[Bound], measurement: Measurement | None, spec: HardwareSpec
) -> tuple[Headroom, ...]:
    if measurement is None:
        return ()
    # Note [Headroom on the measured device] (solar.pipeline): only the measured device
    if measurement.arch is None or measurement.arch.lower() != spec.name.lower():
        return ()
    measured_s = measurement.median_ms / 1e3
    out = []
    for b in bounds:
        if b.time_s <= 0:
            continue
        ratio = measured_s / b.time_s
        # fused and cache-aware bound every implementation; unfused bounds only executions
        # that launch each kernel separately, so beating it means the code fuses kernels.
        out.append(Headroom(model=b.model, ratio=ratio,
                            violation=ratio < 1.0 and b.model != "unfused"))
    return tuple(out)


def _with_measured(
    rows: tuple[KernelRow, ...], measurement: Measurement | None, spec: HardwareSpec
) -> tuple[KernelRow, ...]:
    """``rows`` with the profiled time of each kernel, when measured on ``spec``'s device."""
    if (
        measurement is None
        or not measurement.kernels
        or measurement.arch is None
        or measurement.arch.lower() != spec.name.lower()
    ):
        return rows
    times: dict[str, float] = {}
    for t in measurement.kernels:
        if t.kernel is not None:
            times[t.kernel] = times.get(t.kernel, 0.0) + t.time_ms / 1e3
    return tuple(
        r.model_copy(update={"measured_s": times[r.name]}) if r.name in times else r
        for r in rows
    )


def _cache_assumption(spec: HardwareSpec, cache: CacheState) -> str:
    l2 = spec.l2_capacity_bytes
    l2_text = f"{l2 / 2**20:.0f} MiB L2" if l2 else "L2 of unknown size"
    if cache == "warm":
        return (
            f"warm: up to the {l2_text} may hold the program's data at the start "
            "(repeated runs); the rest moves through DRAM"
        )
    return (
        f"cold: every first touch comes from DRAM; data reused across kernels "
        f"may stay in the {l2_text}"
    )


def build_arch_bounds(
    spec: HardwareSpec,
    bounds: Sequence[Bound],
    *,
    precision_policy: PrecisionPolicy,
    cache: CacheState,
    measurement: Measurement | None = None,
    bf16: Sequence[Bound] | None = None,
) -> ArchBounds:
    """The report row of one device: its roofs, every bound, kernels and headroom.

    Args:
        spec: the device.
        bounds: its bounds, one per model, in report order (`unfused` among them:
            its kernels become the row's kernels).
        precision_policy: the policy the bounds were computed under.
        cache: the cache state they assume.
        measurement: a measured time, for headroom (skipped when it names another
            device).
        bf16: the same bounds under ``--precision bf16`` (Note [Precision what-if
            bytes] in `solar.bounds.recast`), for the hint, or ``None``.

    Returns:
        The row.

    Raises:
        ValueError: ``bounds`` holds no unfused bound.
    """
    unfused = next((b for b in bounds if b.model == "unfused"), None)
    if unfused is None:
        raise ValueError("build_arch_bounds needs the unfused bound (for the kernel rows)")
    return ArchBounds(
        arch=spec.name,
        display_name=spec.display_name,
        spec_measured=spec.measured,
        precision_policy=precision_policy,
        cache_assumption=_cache_assumption(spec, cache),
        peak_flops_per_s=_roofs(spec),
        dram_bandwidth_bytes_per_s=spec.dram_bandwidth_bytes_per_s,
        l2_bandwidth_bytes_per_s=spec.l2_bandwidth_bytes_per_s,
        bounds=tuple(build_bound_result(b) for b in bounds),
        kernels=_with_measured(
            tuple(build_kernel_row(k) for k in unfused.kernels), measurement, spec
        ),
        headroom=_headroom(bounds, measurement, spec),
        bf16_bounds_s=None if bf16 is None else {b.model: b.time_s for b in bf16},
    )
