"""Tests for the bundled hardware specs and the `HardwareSpec` helpers.

The figure table guarding against sparse-as-dense mix-ups and figures below the
datasheet is tests/hw/test_figures.py.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from solar.hw import (
    HardwareSpec,
    Precision,
    dump_hardware_spec,
    hardware_spec_dir,
    list_hardware_specs,
    load_hardware_spec,
    parse_hardware_spec,
)

P = Precision
SPECS = list_hardware_specs()
SPEC_IDS = [spec.name for spec in SPECS]

REQUIRED_DEVICES = {
    "H100_SXM",
    "H100_PCIe",
    "H200",
    "B200",
    "A100_SXM_80GB",
    "A100_PCIe_80GB",
    "L40S",
    "RTX_A6000",
    "RTX_4090",
    "Jetson_AGX_Orin",
    "Jetson_AGX_Thor",
    "MI300X",
    "TPU_v5e",
    "TPU_v5p",
}

# Every figure of every bundled spec is checked against its datasheet value and its
# derivation in tests/hw/test_figures.py.


def test_all_required_devices_are_bundled() -> None:
    assert {spec.name for spec in SPECS} >= REQUIRED_DEVICES


def test_specs_are_sorted_by_name() -> None:
    assert sorted(SPEC_IDS) == SPEC_IDS


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_bundled_spec_loads_by_name_and_file(spec: HardwareSpec) -> None:
    assert load_hardware_spec(spec.name) is spec
    path = hardware_spec_dir() / f"{spec.name.lower()}.yaml"
    assert path.is_file()
    assert load_hardware_spec(path) == spec
    assert not spec.measured


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_bundled_spec_cites_urls(spec: HardwareSpec) -> None:
    assert spec.sources
    for source in spec.sources:
        assert source.url.startswith("https://") or source.url.startswith("http://")
        assert source.edition.strip()
        assert source.fields


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_bundled_spec_has_a_dense_peak_and_bandwidth(spec: HardwareSpec) -> None:
    assert spec.tensor_flops_per_s or spec.vector_flops_per_s
    assert spec.dram_bandwidth_bytes_per_s > 1e9


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_sparse_figures_are_twice_dense_and_never_a_peak(spec: HardwareSpec) -> None:
    for precision, sparse in spec.sparse_peak_flops_per_s.items():
        dense = spec.peak_for(precision)
        assert dense is not None
        assert dense != sparse
        # 2:4 sparsity doubles the rate on NVIDIA and AMD. NVIDIA's L40S datasheet
        # prints 362.05 | 733 for BF16 (ratio 2.02), hence the 3% slack.
        assert sparse / dense == pytest.approx(2.0, rel=0.03)


def test_l2_bandwidth_estimates_exceed_dram_bandwidth() -> None:
    for spec in SPECS:
        if spec.l2_bandwidth_bytes_per_s is not None:
            assert spec.l2_bandwidth_bytes_per_s > spec.dram_bandwidth_bytes_per_s
            assert any("estimate" in note or "derived" in note for note in spec.notes)


def test_peak_for_distinguishes_units() -> None:
    h100 = load_hardware_spec("H100_SXM")
    assert h100.peak_for(P.FP32, "vector") == 67e12
    assert h100.peak_for(P.FP32, "tensor") is None
    assert h100.peak_for(P.TF32) == 494.7e12
    assert h100.peak_for(P.FP4) is None


def test_onchip_capacity_needs_every_part() -> None:
    h100 = load_hardware_spec("H100_SXM")
    assert h100.onchip_capacity_bytes == 132 * (256 + 256) * 1024 + 50 * 1024 * 1024
    # a partial sum would understate the capacity (and overstate the pebble bound)
    assert h100.model_copy(update={"register_file_per_sm_bytes": None}).onchip_capacity_bytes \
        is None
    # TPUs publish VMEM + SMEM (the L2 figure) but no register or MXU buffer sizes
    tpu = load_hardware_spec("TPU_v5e")
    assert tpu.l2_capacity_bytes == (128 + 1) * 1024 * 1024
    assert tpu.onchip_capacity_bytes is None


def test_spec_is_frozen_and_hashable() -> None:
    h100 = load_hardware_spec("H100_SXM")
    with pytest.raises(ValidationError):
        setattr(h100, "sm_count", 1)  # noqa: B010 (mypy need not know it is frozen)
    assert len({h100, load_hardware_spec("h100-sxm")}) == 1


def test_json_schema_is_generated() -> None:
    schema = HardwareSpec.model_json_schema()
    assert schema["additionalProperties"] is False
    assert "peak_flops_per_s" in schema["required"]


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_dump_roundtrips(spec: HardwareSpec) -> None:
    assert parse_hardware_spec(dump_hardware_spec(spec)) == spec
