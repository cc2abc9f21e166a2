"""Re-binding: a prepared program's costs at another binding of its free sizes.

Contract: ``PreparedProgram + binding -> ReboundCosts`` (`costs_at`), without capturing
again (docs/scale.md; the sweep's Note [Symbolic re-binding] in `solar.sweep.worker`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from solar.bounds import CompiledCosts, compile_costs
from solar.diagnostics import UsageError
from solar.hw import HardwareSpec, load_hardware_spec
from solar.ir import resolve_sizes
from solar.options import DEFAULT_ARCH, CacheState
from solar.pipeline.assemble import bound_devices, free_sizes
from solar.pipeline.prepare import PreparedProgram
from solar.report import ArchBounds, build_arch_bounds

__all__ = ["ReboundCosts", "costs_at"]


@dataclass(frozen=True, slots=True)
class ReboundCosts:
    """A prepared program's costs at another size binding (`costs_at`).

    Attributes:
        sizes: every size of the program at the new binding (free and derived).
        flops: total FLOPs.
        fused_dram_bytes: compulsory traffic (inputs, parameters, outputs once; cold).
        archs: the three bounds per device, as report rows.
    """

    sizes: dict[str, int]
    flops: float
    fused_dram_bytes: float
    archs: tuple[ArchBounds, ...]


def costs_at(
    prepared: PreparedProgram,
    binding: Mapping[str, int],
    specs: Sequence[HardwareSpec] = (),
    *,
    cache: CacheState = "warm",
    compiled: CompiledCosts | None = None,
) -> ReboundCosts:
    """The costs and bounds of ``prepared`` at ``binding``, without capturing again.

    A traced program is symbolic in the model file's size constants where
    `solar.frontends.kit.symbolize_sizes` could confirm it (the report's
    ``symbolic_sizes``); an IR file in all its free sizes. Sizes left out of
    ``binding`` keep their analysed values.

    Args:
        prepared: the prepared program (`solar.pipeline.prepare`).
        binding: new values of some free sizes.
        specs: devices to bound on (none: work figures only, on the default arch).
        cache: the cache state the bounds assume.
        compiled: ``compile_costs(prepared.graph)``, to reuse across calls.

    Returns:
        The costs at the new binding.

    Raises:
        UsageError: E0913, a name that is no size of the program; E0914, a size of the
            model file the formulas are constant in (re-capture with ``--set``).
        IRVerifyError: E0221, a size evaluates to a non-positive value.
    """
    free = free_sizes(prepared.program)
    _check_binding(binding, free, prepared.front.source_sizes)
    sizes = resolve_sizes(prepared.program, {**free, **binding})
    compiled = compiled if compiled is not None else compile_costs(prepared.graph)
    work_spec = specs[0] if specs else load_hardware_spec(DEFAULT_ARCH)
    point = bound_devices(compiled, specs, precision=prepared.precision, sizes=sizes,
                          cache=cache, work_spec=work_spec)
    archs = tuple(
        build_arch_bounds(spec, bounds, precision_policy=prepared.precision, cache=cache)
        for spec, bounds in zip(specs, point.bounds, strict=True)
    )
    return ReboundCosts(sizes, point.work.flops, point.work.dram_bytes, archs)


def _check_binding(
    binding: Mapping[str, int], free: Mapping[str, int], source: Mapping[str, int]
) -> None:
    """Raises E0913/E0914 (see `costs_at`) for a name that cannot be re-bound."""
    for name in binding:
        if name in free:
            continue
        if name in source:
            raise UsageError(
                f"size {name} is a constant in this analysis's formulas; analyse again "
                f"with --set {name}={binding[name]}",
                code="E0914",
                notes=(f"symbolic sizes: {', '.join(free) or 'none'}",),
            )
        known = ", ".join(sorted({*free, *source})) or "none"
        raise UsageError(f"{name} is no size of this program", code="E0913",
                         notes=(f"its sizes: {known}",))
