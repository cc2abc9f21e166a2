"""Rendering of the cross-device commands (``compare``, ``provision``): text and JSON.

Contract: ``PlatformRow``s / ``InverseRoofline`` -> text table or deterministic JSON.
Every row says the precision its FLOPs were charged at (``tensor:tf32``, ``tensor:bf16``
...), and a row that charges fp32 work at a reduced-precision peak is marked with
``*`` and explained once under the table (Note [Precision per row] in
`solar.bounds.analyses`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from solar.options import BOUND_MODEL_NAMES

if TYPE_CHECKING:
    from solar.bounds import InverseRoofline, Pipe, PlatformRow

__all__ = ["compare_json", "compare_text", "provision_json", "provision_text"]

_MARK_NOTE = (
    "* fp32 work charged at a reduced-precision peak (TF32, or the bf16 matrix unit of a\n"
    "  device without TF32), as the precision policy allows: below what fp32-accurate\n"
    "  code can reach on that device"
)


def _pipes(flops_by_pipe: Mapping[Pipe, float]) -> str:
    """Pipe labels by FLOPs, largest first: ``tensor:tf32+vector:fp32``."""
    items = sorted(((f, p.label) for p, f in flops_by_pipe.items() if f > 0), reverse=True)
    return "+".join(p for _, p in items) or "-"


def _labelled(values: Mapping[Pipe, float]) -> dict[str, float]:
    from solar.bounds import pipe_labels

    return pipe_labels(values)


def compare_text(rows: Sequence[PlatformRow]) -> str:
    """The ``compare`` table, one line per device."""
    from solar.report import format_time

    by_dev: dict[str, dict[str, PlatformRow]] = {}
    for row in rows:
        by_dev.setdefault(row.device, {})[row.model] = row
    policy = rows[0].precision_policy if rows else "default"
    lines = [
        f"precision policy {policy}",
        f"{'device':<18} {'unfused':>12} {'fused':>12} {'cache-aware':>12}  "
        f"{'fused bottleneck':<16} precision (fused)",
    ]
    marked = False
    for dev, models in by_dev.items():
        cells = [format_time(models[m].time_s) if m in models else "-" for m in BOUND_MODEL_NAMES]
        fused = models.get("fused") or next(iter(models.values()))
        mark = "*" if fused.reduced_precision else ""
        marked = marked or fused.reduced_precision
        lines.append(
            f"{dev:<18} {cells[0]:>12} {cells[1]:>12} {cells[2]:>12}  "
            f"{fused.bottleneck:<16} {_pipes(fused.flops_by_pipe)}{mark}"
        )
    if marked:
        lines.append(_MARK_NOTE)
    return "\n".join(lines) + "\n"


def compare_json(rows: Sequence[PlatformRow], sizes: Mapping[str, int]) -> str:
    """The ``compare`` rows as deterministic JSON."""
    from solar.report import dumps_deterministic

    data: dict[str, Any] = {
        "sizes": dict(sorted(sizes.items())),
        "rows": [
            {
                "device": r.device,
                "model": r.model,
                "precision_policy": r.precision_policy,
                "time_s": r.time_s,
                "compute_time_s": r.compute_time_s,
                "memory_time_s": r.memory_time_s,
                "dram_bytes": r.dram_bytes,
                "flops": r.flops,
                "bottleneck": r.bottleneck,
                "flops_by_pipe": _labelled(r.flops_by_pipe),
                "reduced_precision": r.reduced_precision,
            }
            for r in rows
        ],
    }
    return dumps_deterministic(data)


def provision_text(inv: InverseRoofline) -> str:
    """The ``provision`` summary and device table."""
    from solar.report import format_bytes, format_time

    lines = [
        f"target {format_time(inv.target_time_s)} under the {inv.model} model "
        f"(precision policy {inv.precision_policy}):",
        f"  DRAM bandwidth  >= {format_bytes(inv.required_dram_bandwidth_bytes_per_s)}/s "
        f"({format_bytes(inv.dram_bytes)} moved)",
    ]
    for pipe, need in sorted(inv.required_flops_per_s.items(), key=lambda pn: pn[0].label):
        unit = pipe.label
        flexible = inv.flexible_flops_per_s.get(pipe, 0.0)
        if need > flexible:
            lines.append(f"  {unit:<15} >= {(need - flexible) / 1e12:,.3f} TFLOP/s")
        if flexible > 0:  # matmul work the policy also lets run on other pipes
            lines.append(
                f"  {unit:<15} >= {flexible / 1e12:,.3f} TFLOP/s of matmul/convolution work, "
                f"or as fast on\n{'':<21}{', '.join(p.label for p in inv.alternatives[pipe])} "
                "(whichever the device has)"
            )
    lines.append(f"{'device':<18} {'bound':>12}  {'meets target':<12}  precision")
    marked = False
    for d in inv.devices:
        mark = "*" if d.reduced_precision else ""
        marked = marked or d.reduced_precision
        lines.append(
            f"{d.device:<18} {format_time(d.time_s):>12}  {'yes' if d.meets else 'no':<12}  "
            f"{_pipes(d.flops_by_pipe)}{mark}"
        )
    if marked:
        lines.append(_MARK_NOTE)
    return "\n".join(lines) + "\n"


def provision_json(inv: InverseRoofline, sizes: Mapping[str, int]) -> str:
    """The ``provision`` result as deterministic JSON."""
    from solar.report import dumps_deterministic

    data: dict[str, Any] = {
        "sizes": dict(sorted(sizes.items())),
        "target_time_s": inv.target_time_s,
        "model": inv.model,
        "precision_policy": inv.precision_policy,
        "dram_bytes": inv.dram_bytes,
        "flops_by_pipe": _labelled(inv.flops_by_pipe),
        "required_dram_bandwidth_bytes_per_s": inv.required_dram_bandwidth_bytes_per_s,
        "required_flops_per_s": _labelled(inv.required_flops_per_s),
        "devices": [
            {
                "device": d.device,
                "time_s": d.time_s,
                "meets": d.meets,
                "required_dram_bandwidth_bytes_per_s": d.required_dram_bandwidth_bytes_per_s,
                "flops_by_pipe": _labelled(d.flops_by_pipe),
                "reduced_precision": d.reduced_precision,
            }
            for d in inv.devices
        ],
    }
    return dumps_deterministic(data)
