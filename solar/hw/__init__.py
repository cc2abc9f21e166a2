"""Hardware specs: validated, cited, dense peak figures for each device.

Contract: `load_hardware_spec(name_or_path) -> HardwareSpec` is the entry point;
`HardwareSpec` (pydantic, frozen) carries dense peaks, the memory system and
sources. Every failure is a `solar.diagnostics.HardwareSpecError` (E0401-E0404).
"""

from __future__ import annotations

from solar.hw.calibrate import calibrate_machine
from solar.hw.loader import (
    dump_hardware_spec,
    hardware_spec_dir,
    list_hardware_specs,
    load_hardware_spec,
    parse_hardware_spec,
    validate_hardware_spec,
)
from solar.hw.match import device_matches_spec, mismatch_reason
from solar.hw.spec import (
    FIGURE_FIELDS,
    ComputeUnit,
    DeviceKind,
    HardwareSpec,
    Precision,
    Source,
    sanity_problems,
)

__all__ = [
    "calibrate_machine",
    "FIGURE_FIELDS",
    "ComputeUnit",
    "DeviceKind",
    "HardwareSpec",
    "Precision",
    "Source",
    "device_matches_spec",
    "dump_hardware_spec",
    "hardware_spec_dir",
    "list_hardware_specs",
    "load_hardware_spec",
    "mismatch_reason",
    "parse_hardware_spec",
    "sanity_problems",
    "validate_hardware_spec",
]
