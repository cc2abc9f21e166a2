"""Derived analyses: one graph across devices, and the inverse roofline.

Contract: pure functions over `compute_bounds` results.

* `cross_platform`: the same graph on several specs, one row per (device, model).
* `inverse_roofline`: for a target time T, the DRAM bandwidth and per-pipe peaks a
  device needs (``bytes / T`` and ``FLOPs_pipe / T``; each is necessary, and for
  the fused model together sufficient), and which listed devices meet T.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from solar.bounds.costs import CompiledCosts, as_compiled
from solar.bounds.errors import BoundError
from solar.bounds.fused import compulsory_bytes
from solar.bounds.precision import Pipe, PrecisionPolicy, check_policy, policy_pipe
from solar.bounds.recast import recast_costs
from solar.bounds.registry import BOUND_MODELS, check_model, compute_bounds
from solar.bounds.roofline import Bottleneck, BoundModel, CacheState
from solar.bounds.unfused import kernel_traffic
from solar.einsum import EinsumGraph
from solar.hw import HardwareSpec, Precision
from solar.ir import DType

__all__ = [
    "DeviceRequirement",
    "InverseRoofline",
    "PlatformRow",
    "cross_platform",
    "inverse_roofline",
    "reduced_precision",
]


_REDUCED = frozenset({Precision.TF32, Precision.BF16, Precision.FP16, Precision.FP8})


def _has_fp32_work(compiled: CompiledCosts, sizes: Mapping[str, int] | None) -> bool:
    costs = compiled.evaluate(sizes)
    for kind, flops in zip(compiled.group_work.tolist(), costs.group_flops.tolist(),
                           strict=True):
        if flops > 0 and compiled.work_kinds[kind].dtype == DType.F32:
            return True
    return False


def reduced_precision(flops_by_pipe: Mapping[Pipe, float], fp32_work: bool) -> bool:
    """Whether fp32 work is charged at a single-pass reduced-precision peak.

    Note [Precision per row]: a device without the pipe the policy asks for (a TPU has
    no TF32) runs the work on the one it has, so the same program can be bounded at
    TF32 on one device and at the bf16 MXU peak on another. Rows say so.

    >>> bf16, fp32 = Pipe("tensor", Precision.BF16), Pipe("vector", Precision.FP32)
    >>> reduced_precision({bf16: 1.0, fp32: 2.0}, True)
    True
    >>> reduced_precision({Pipe("tensor", Precision.TF32, 3): 1.0}, True)
    False
    """
    return fp32_work and any(
        flops > 0 and pipe.passes == 1 and pipe.precision in _REDUCED
        for pipe, flops in flops_by_pipe.items()
    )


@dataclass(frozen=True, slots=True)
class PlatformRow:
    """One (device, model) bound.

    Attributes:
        flops_by_pipe: FLOPs per pipe (``tensor:bf16``...): the precision each FLOP
            was charged at on this device.
        reduced_precision: fp32 work charged at a reduced-precision peak (Note
            [Precision per row]).
    """

    device: str
    model: BoundModel
    precision_policy: PrecisionPolicy
    time_s: float
    compute_time_s: float
    memory_time_s: float
    dram_bytes: float
    flops: float
    bottleneck: Bottleneck
    flops_by_pipe: Mapping[Pipe, float]
    reduced_precision: bool


def cross_platform(
    graph: EinsumGraph | CompiledCosts, specs: Sequence[HardwareSpec], *,
    models: Sequence[BoundModel] = tuple(BOUND_MODELS),
    precision_policy: PrecisionPolicy = "default", sizes: Mapping[str, int] | None = None,
    cache: CacheState = "warm",
) -> tuple[PlatformRow, ...]:
    """Bounds of one graph (or its compiled costs) on several devices, device-major.

    Raises:
        BoundError: E0450/E0451/E0452 as `compute_bounds`.
    """
    compiled = as_compiled(graph)
    fp32 = _has_fp32_work(compiled, sizes)
    rows = []
    for spec in specs:
        for model in models:
            b = compute_bounds(compiled, spec, model=model, precision_policy=precision_policy,
                               sizes=sizes, cache=cache)
            by_pipe = dict(b.flops_by_pipe)  # in label order
            rows.append(PlatformRow(spec.name, model, precision_policy, b.time_s,
                                    b.compute_time_s, b.memory_time_s, b.dram_bytes, b.flops,
                                    b.bottleneck, by_pipe, reduced_precision(by_pipe, fp32)))
    return tuple(rows)


@dataclass(frozen=True, slots=True)
class DeviceRequirement:
    """Whether a device meets the target, with its own caches taken into account."""

    device: str
    time_s: float
    meets: bool
    required_dram_bandwidth_bytes_per_s: float
    flops_by_pipe: Mapping[Pipe, float]
    reduced_precision: bool


@dataclass(frozen=True, slots=True)
class InverseRoofline:
    """What a device needs to run the graph in ``target_time_s`` under ``model``.

    Attributes:
        target_time_s: T.
        model: the bound model.
        precision_policy: the policy mapping work to pipes.
        dram_bytes: DRAM bytes of the model with unlimited caches (device-independent).
        flops_by_pipe: FLOPs per requested pipe.
        required_dram_bandwidth_bytes_per_s: ``dram_bytes / T``.
        required_flops_per_s: ``FLOPs_pipe / T`` per pipe.
        devices: per listed device, its bound and whether it meets T.
        alternatives: per pipe, the other pipes the policy lets some of its work
            run on (an fp32 matmul keyed ``vector:fp32`` runs on ``tensor:3xtf32`` too):
            that work's requirement is on whichever of them a device has.
        flexible_flops_per_s: of ``required_flops_per_s``, the part of that work.
    """

    target_time_s: float
    model: BoundModel
    precision_policy: PrecisionPolicy
    dram_bytes: float
    flops_by_pipe: Mapping[Pipe, float]
    required_dram_bandwidth_bytes_per_s: float
    required_flops_per_s: Mapping[Pipe, float]
    devices: tuple[DeviceRequirement, ...]
    alternatives: Mapping[Pipe, tuple[Pipe, ...]] = field(default_factory=dict)
    flexible_flops_per_s: Mapping[Pipe, float] = field(default_factory=dict)


def inverse_roofline(
    graph: EinsumGraph | CompiledCosts, *, target_time_s: float, model: BoundModel = "fused",
    precision_policy: PrecisionPolicy = "default", sizes: Mapping[str, int] | None = None,
    specs: Sequence[HardwareSpec] = (), cache: CacheState = "warm",
) -> InverseRoofline:
    """The inverse roofline (see the module docstring).

    Device-independent requirements assume unlimited caches (the least traffic the
    model allows); each listed device is also evaluated with its own caches.

    Raises:
        BoundError: E0453 target time not positive and finite; E0450/E0451 as
            `compute_bounds`.
    """
    check_model(model)
    check_policy(precision_policy)
    if not (math.isfinite(target_time_s) and target_time_s > 0):
        raise BoundError(
            f"target time must be positive and finite, got {target_time_s!r}", code="E0453"
        )
    compiled = recast_costs(as_compiled(graph), precision_policy)  # Note [Precision what-if bytes]
    costs = compiled.evaluate(sizes)
    if model == "unfused":
        dram, _ = kernel_traffic(compiled, costs).split(math.inf)
        dram_bytes = float(np.sum(dram))
    else:
        dram_bytes = compulsory_bytes(costs)
    kind_pipes = [policy_pipe(k.work, k.dtype, k.convolution, precision_policy)
                  for k in compiled.work_kinds]
    flops: dict[Pipe, float] = {}
    flexible: dict[Pipe, float] = {}
    alternatives: dict[Pipe, tuple[Pipe, ...]] = {}
    for kind, group_flops in zip(compiled.group_work.tolist(), costs.group_flops.tolist(),
                                 strict=True):
        pipe = kind_pipes[kind][0]
        flops[pipe] = flops.get(pipe, 0.0) + float(group_flops)
        if len(kind_pipes[kind]) > 1 and group_flops > 0:
            flexible[pipe] = flexible.get(pipe, 0.0) + float(group_flops)
            alternatives[pipe] = kind_pipes[kind][1:]
    devices = []
    fp32 = _has_fp32_work(compiled, sizes)
    for spec in specs:
        b = compute_bounds(compiled, spec, model=model, precision_policy=precision_policy,
                           sizes=sizes, cache=cache)
        by_pipe = dict(b.flops_by_pipe)  # in label order
        devices.append(DeviceRequirement(spec.name, b.time_s, b.time_s <= target_time_s,
                                         b.dram_bytes / target_time_s, by_pipe,
                                         reduced_precision(by_pipe, fp32)))
    return InverseRoofline(
        target_time_s=target_time_s, model=model, precision_policy=precision_policy,
        dram_bytes=dram_bytes, flops_by_pipe=_label_order(flops),
        required_dram_bandwidth_bytes_per_s=dram_bytes / target_time_s,
        required_flops_per_s=_label_order({k: v / target_time_s for k, v in flops.items()}),
        devices=tuple(devices),
        alternatives=alternatives,
        flexible_flops_per_s=_label_order({k: v / target_time_s for k, v in flexible.items()}),
    )


def _label_order(values: Mapping[Pipe, float]) -> dict[Pipe, float]:
    return dict(sorted(values.items(), key=lambda pv: pv[0].label))
