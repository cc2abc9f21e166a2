"""The training step's report section: each phase bounded alone, and the step's memory.

Contract: ``PreparedProgram + specs -> TrainingInfo`` (`training_info`, docs/training.md).
The phases are split from the program every other figure bounds (`PreparedProgram.
bounds_program`, Note [One preparation path] in `solar.pipeline.prepare`), and each is
bounded by the same models (`solar.pipeline.assemble.bound_devices`). The phase split
and the memory count are pure IR functions in `solar.training`.
"""

from __future__ import annotations

from collections.abc import Sequence

from solar.bounds import compile_costs
from solar.einsum import lift_to_einsum
from solar.hw import HardwareSpec
from solar.options import CacheState, PrecisionPolicy
from solar.pipeline.assemble import bound_devices
from solar.pipeline.prepare import PreparedProgram
from solar.report import PhaseArchBounds, PhaseBound, PhaseInfo, TrainingInfo
from solar.training import split_phases, step_memory

__all__ = ["training_info"]


def training_info(
    prepared: PreparedProgram,
    specs: Sequence[HardwareSpec],
    *,
    precision: PrecisionPolicy,
    cache: CacheState,
) -> TrainingInfo:
    """Each phase of ``prepared``'s training step bounded alone, and the step's memory.

    Raises:
        ValueError: ``prepared`` is no training step (its frontend gave no step).
        BoundError: no usable peak for the policy on a device (E0452).
    """
    step = prepared.front.step
    if step is None:
        raise ValueError("training_info needs a training step's program")
    program = prepared.bounds_program
    phases = []
    for part in split_phases(program, step.phase_of):
        compiled = compile_costs(lift_to_einsum(part.program))
        point = bound_devices(compiled, specs, precision=precision, sizes=prepared.sizes,
                              cache=cache)
        archs = tuple(
            PhaseArchBounds(arch=spec.name, bounds=tuple(
                PhaseBound(model=b.model, time_s=b.time_s, flops=b.flops,
                           dram_bytes=b.dram_bytes, bottleneck=b.bottleneck)
                for b in bounds
            ))
            for spec, bounds in zip(specs, point.bounds, strict=True)
        )  # fmt: skip
        phases.append(PhaseInfo(phase=part.phase, kernels=len(part.program.kernels),
                                flops=point.work.flops, fused_dram_bytes=point.work.dram_bytes,
                                archs=archs))
    mem = step_memory(program, step.phase_of, prepared.sizes)
    return TrainingInfo(
        loss=step.loss,
        optimizer=step.optimizer,
        phases=tuple(phases),
        parameter_bytes=mem.parameter_bytes,
        optimizer_state_bytes=mem.optimizer_state_bytes,
        gradient_bytes=mem.gradient_bytes,
        input_bytes=mem.input_bytes,
        saved_activation_bytes=mem.saved_activation_bytes,
        peak_bytes=mem.peak_bytes,
    )
