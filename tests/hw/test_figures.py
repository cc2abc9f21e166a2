"""Every figure of every bundled spec, checked against its datasheet value and derivation.

The rule (docs/bounds.md, "Hardware figures"): a peak or bandwidth is the LARGER of the
vendor's figure and its derivation from units x rate x clock, because a bound divides
by it and must not exceed any real run. Each row below gives the vendor's DENSE figure
as listed in the project's shared/hw_specs.md (sparse figures halved there) and/or the
derivation, evaluated here; the spec must hold their maximum. Published figures are
rounded to about four significant digits, so a spec figure may fall short of the exact
maximum by half a unit in that last place (`ROUND_DOWN`), and may be rounded up a little
(`ROUND_UP`), never more: a larger figure would be a sparse-as-dense slip.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from solar.hw import FIGURE_FIELDS, HardwareSpec, list_hardware_specs, load_hardware_spec

ROUND_DOWN = 5e-4
ROUND_UP = 1e-3
KIB, MIB = 1024, 1024 * 1024
T = 1e12


@dataclass(frozen=True)
class Fig:
    """A figure: the vendor's value (dense), its derivation, and how it is derived."""

    datasheet: float | None = None
    derived: float | None = None
    how: str = "datasheet"

    @property
    def expected(self) -> float:
        return max(v for v in (self.datasheet, self.derived) if v is not None)


def ds(value: float) -> Fig:
    return Fig(value)


def both(datasheet: float | None, derived: float, how: str) -> Fig:
    return Fig(datasheet, derived, how)


def per_sm(sms: int, flop_per_clk: float, clock_hz: float, datasheet: float | None = None) -> Fig:
    return Fig(datasheet, sms * flop_per_clk * clock_hz,
               f"{sms} SMs x {flop_per_clk:g} FLOP/clk x {clock_hz / 1e9:g} GHz")


def l2_scaled(l2_mb: float, clock_hz: float) -> Fig:
    # A100's published L2 read rate, 5,120 B/clk for its 40 MB (80 slices x 64 B/clk),
    # scaled by L2 size, at the max boost clock: a derived estimate (upper end)
    return Fig(None, 5120 * l2_mb / 40 * clock_hz,
               f"5,120 B/clk x {l2_mb:g}/40 MB x {clock_hz / 1e9:g} GHz")


def _hopper(sms: int, ct: float, cv: float, tensor_ds: dict[str, float],
            vector_ds: dict[str, float], sparse: dict[str, float], *, tensor_derived: bool,
            dram: tuple[float, Fig]) -> dict[str, Fig]:
    rates = {"tf32": 2048, "bf16": 4096, "fp16": 4096, "fp8": 8192, "int8": 8192}
    rows: dict[str, Fig] = {
        f"peak_flops_per_s.{p}": per_sm(sms, r, ct, tensor_ds[p]) if tensor_derived
        else ds(tensor_ds[p]) for p, r in rates.items()
    }
    rows["peak_flops_per_s.fp64"] = per_sm(sms, 256, cv, tensor_ds["fp64"])
    rows["vector_flops_per_s.fp64"] = per_sm(sms, 128, cv, vector_ds["fp64"])
    rows["vector_flops_per_s.fp32"] = per_sm(sms, 256, cv, vector_ds["fp32"])
    for p in ("bf16", "fp16"):  # Hopper whitepaper table 3: 2 x FP32
        rows[f"vector_flops_per_s.{p}"] = per_sm(sms, 512, cv, 2 * vector_ds["fp32"])
    rows.update({f"sparse_peak_flops_per_s.{p}": ds(v) for p, v in sparse.items()})
    rows.update({
        "dram_capacity_bytes": ds(dram[0]),
        "dram_bandwidth_bytes_per_s": dram[1],
        "l2_capacity_bytes": Fig(50 * MIB, how="50 MB, read as MiB"),
        "l2_bandwidth_bytes_per_s": l2_scaled(50, cv),
        "smem_per_sm_bytes": ds(256 * KIB),
        "register_file_per_sm_bytes": ds(256 * KIB),
        "sm_count": ds(sms),
        "clock_hz_vector": ds(cv),
    })
    return rows


H100_SXM = _hopper(
    132, 1.83e9, 1.98e9,
    {"fp64": 67 * T, "tf32": 494.7 * T, "bf16": 989.4 * T, "fp16": 989.4 * T,
     "fp8": 1979 * T, "int8": 1979 * T},
    {"fp64": 34 * T, "fp32": 67 * T},
    {"tf32": 989 * T, "bf16": 1979 * T, "fp16": 1979 * T, "fp8": 3958 * T, "int8": 3958 * T},
    tensor_derived=True, dram=(80e9, ds(3.35e12)),
) | {"clock_hz_tensor": ds(1.83e9)}

FIGURES: dict[str, dict[str, Fig]] = {
    "H100_SXM": H100_SXM,
    "H200": H100_SXM | {"dram_capacity_bytes": ds(141e9),
                        "dram_bandwidth_bytes_per_s": ds(4.8e12)},
    "H100_PCIe": _hopper(
        114, 1.62e9, 1.755e9,
        {"fp64": 51 * T, "tf32": 378 * T, "bf16": 756 * T, "fp16": 756 * T,
         "fp8": 1513 * T, "int8": 1513 * T},
        {"fp64": 26 * T, "fp32": 51 * T},
        {"tf32": 756 * T, "bf16": 1513 * T, "fp16": 1513 * T, "fp8": 3026 * T,
         "int8": 3026 * T},
        tensor_derived=False,
        dram=(80e9, both(2.0e12, 5120 / 8 * 1.593e9 * 2, "5,120-bit HBM2e x 1,593 MHz DDR")),
    ) | {"clock_hz_tensor": both(None, 756e12 / (114 * 4096),
                                 "756 TFLOP/s / (114 SMs x 4096 FLOP/clk)")},
    "B200": {  # the larger of the 2024 (listed) and 2025 (37 / 75 / 1,100 / 7.7) editions
        "peak_flops_per_s.fp64": ds(40 * T),
        "peak_flops_per_s.tf32": ds(1125 * T),
        "peak_flops_per_s.bf16": ds(2250 * T),
        "peak_flops_per_s.fp16": ds(2250 * T),
        "peak_flops_per_s.fp8": ds(4500 * T),
        "peak_flops_per_s.int8": ds(4500 * T),
        "peak_flops_per_s.fp4": ds(9000 * T),
        "vector_flops_per_s.fp64": ds(40 * T),
        "vector_flops_per_s.fp32": ds(80 * T),
        "sparse_peak_flops_per_s.tf32": ds(2250 * T),
        "sparse_peak_flops_per_s.bf16": ds(4500 * T),
        "sparse_peak_flops_per_s.fp16": ds(4500 * T),
        "sparse_peak_flops_per_s.fp8": ds(9000 * T),
        "sparse_peak_flops_per_s.int8": ds(9000 * T),
        "sparse_peak_flops_per_s.fp4": ds(18000 * T),
        "dram_capacity_bytes": ds(180e9),
        "dram_bandwidth_bytes_per_s": ds(8e12),
        "l2_capacity_bytes": Fig(126 * MIB, how="126 MB measured, read as MiB"),
        "smem_per_sm_bytes": ds(256 * KIB),
        "register_file_per_sm_bytes": ds(256 * KIB),
        "tensor_memory_per_sm_bytes": Fig(256 * KIB, how="PTX ISA: 128 lanes x 512 x 32 bit"),
        "sm_count": ds(148),
        "clock_hz_vector": both(None, 80e12 / (148 * 256), "80 TFLOP/s / (148 SMs x 256)"),
    },
    "GB200": {  # NVL72 per-GPU table (sparse halved) and Lockwood's 1,200 W table, larger of
        "peak_flops_per_s.fp64": ds(45 * T),
        "peak_flops_per_s.tf32": ds(1250 * T),
        "peak_flops_per_s.bf16": ds(2500 * T),
        "peak_flops_per_s.fp16": ds(2500 * T),
        "peak_flops_per_s.fp8": ds(5000 * T),
        "peak_flops_per_s.int8": ds(5000 * T),
        "peak_flops_per_s.fp4": ds(10000 * T),
        "vector_flops_per_s.fp64": ds(45 * T),
        "vector_flops_per_s.fp32": ds(90 * T),
        "sparse_peak_flops_per_s.tf32": ds(2500 * T),
        "sparse_peak_flops_per_s.bf16": ds(5000 * T),
        "sparse_peak_flops_per_s.fp16": ds(5000 * T),
        "sparse_peak_flops_per_s.fp8": ds(10000 * T),
        "sparse_peak_flops_per_s.int8": ds(10000 * T),
        "sparse_peak_flops_per_s.fp4": ds(20000 * T),
        "dram_capacity_bytes": ds(186e9),
        "dram_bandwidth_bytes_per_s": ds(8e12),
        "l2_capacity_bytes": Fig(126 * MIB, how="126 MB measured on B200, read as MiB"),
        "smem_per_sm_bytes": ds(256 * KIB),
        "register_file_per_sm_bytes": ds(256 * KIB),
        "tensor_memory_per_sm_bytes": Fig(256 * KIB, how="PTX ISA: 128 lanes x 512 x 32 bit"),
        "sm_count": ds(148),
    },
}


def _a100(bw: float) -> dict[str, Fig]:
    sms, clk = 108, 1.41e9
    return {
        "peak_flops_per_s.fp64": per_sm(sms, 128, clk, 19.5 * T),
        "peak_flops_per_s.tf32": per_sm(sms, 1024, clk, 156 * T),
        "peak_flops_per_s.bf16": per_sm(sms, 2048, clk, 312 * T),
        "peak_flops_per_s.fp16": per_sm(sms, 2048, clk, 312 * T),
        "peak_flops_per_s.int8": per_sm(sms, 4096, clk, 624 * T),
        "vector_flops_per_s.fp64": per_sm(sms, 64, clk, 9.7 * T),
        "vector_flops_per_s.fp32": per_sm(sms, 128, clk, 19.5 * T),
        "vector_flops_per_s.fp16": per_sm(sms, 512, clk, 78 * T),  # whitepaper table 1
        "vector_flops_per_s.bf16": per_sm(sms, 256, clk, 39 * T),  # whitepaper table 1
        "sparse_peak_flops_per_s.tf32": ds(312 * T),
        "sparse_peak_flops_per_s.bf16": ds(624 * T),
        "sparse_peak_flops_per_s.fp16": ds(624 * T),
        "sparse_peak_flops_per_s.int8": ds(1248 * T),
        "dram_capacity_bytes": ds(80e9),
        "dram_bandwidth_bytes_per_s": ds(bw),
        "l2_capacity_bytes": Fig(40 * MIB, how="40 MB, read as MiB"),
        "l2_bandwidth_bytes_per_s": l2_scaled(40, clk),
        "smem_per_sm_bytes": ds(192 * KIB),
        "register_file_per_sm_bytes": ds(256 * KIB),
        "sm_count": ds(sms),
        "clock_hz_tensor": ds(clk),
        "clock_hz_vector": ds(clk),
    }


def _ada(sms: int, clk: float, tensor: dict[str, tuple[float, int]], fp32: float,
         fp64: Fig, sparse: dict[str, float], rest: dict[str, Fig]) -> dict[str, Fig]:
    rows = {f"peak_flops_per_s.{p}": per_sm(sms, r, clk, v) for p, (v, r) in tensor.items()}
    rows["vector_flops_per_s.fp32"] = per_sm(sms, 256, clk, fp32)
    for p in ("bf16", "fp16"):  # 1:1 with FP32 (Ada / GA102 whitepapers)
        rows[f"vector_flops_per_s.{p}"] = per_sm(sms, 256, clk, fp32)
    rows["vector_flops_per_s.fp64"] = fp64
    rows.update({f"sparse_peak_flops_per_s.{p}": ds(v) for p, v in sparse.items()})
    rows.update({"register_file_per_sm_bytes": ds(256 * KIB), "sm_count": ds(sms),
                 "clock_hz_tensor": ds(clk), "clock_hz_vector": ds(clk)})
    return rows | rest


FIGURES |= {
    "A100_SXM_80GB": _a100(2.039e12),
    "A100_PCIe_80GB": _a100(1.935e12),
    "L40S": _ada(
        142, 2.52e9,
        {"tf32": (183 * T, 512), "bf16": (362.05 * T, 1024), "fp16": (362.05 * T, 1024),
         "fp8": (733 * T, 2048), "int8": (733 * T, 2048)},
        91.6 * T, both(None, 91.6e12 / 64, "FP32 / 64 (Ada FP64 rate)"),
        {"tf32": 366 * T, "bf16": 733 * T, "fp16": 733 * T, "fp8": 1466 * T, "int8": 1466 * T},
        {"dram_capacity_bytes": ds(48e9), "dram_bandwidth_bytes_per_s": ds(864e9),
         "l2_capacity_bytes": Fig(96 * MIB, how="96 MB, read as MiB"),
         "smem_per_sm_bytes": ds(128 * KIB)},
    ),
    "RTX_A6000": _ada(
        84, 1.8e9,
        {"tf32": (77.4 * T, 512), "bf16": (154.8 * T, 1024), "fp16": (154.8 * T, 1024),
         "int8": (309.7 * T, 2048)},
        38.7 * T, ds(1.21 * T),
        {"tf32": 154.8 * T, "bf16": 309.7 * T, "fp16": 309.7 * T, "int8": 619.4 * T},
        {"dram_capacity_bytes": ds(48e9), "dram_bandwidth_bytes_per_s": ds(768e9),
         "l2_capacity_bytes": Fig(6 * MIB, how="6 MB, read as MiB"),
         "smem_per_sm_bytes": ds(128 * KIB)},
    ),
    "RTX_4090": _ada(  # FP16 / FP8 with FP16 accumulate (2x the FP32-accumulate rows)
        128, 2.52e9,
        {"tf32": (82.6 * T, 256), "bf16": (165.2 * T, 512), "fp16": (330.3 * T, 1024),
         "fp8": (660.6 * T, 2048), "int8": (660.6 * T, 2048)},
        82.6 * T, ds(1.29 * T),
        {"tf32": 165.2 * T, "bf16": 330.4 * T, "fp16": 660.6 * T, "fp8": 1321.2 * T,
         "int8": 1321.2 * T},
        {"dram_capacity_bytes": ds(24e9), "dram_bandwidth_bytes_per_s": ds(1.008e12),
         "l2_capacity_bytes": Fig(72 * MIB, how="72 MB, read as MiB"),
         "smem_per_sm_bytes": ds(128 * KIB)},
    ),
    "Jetson_AGX_Orin": {
        "peak_flops_per_s.tf32": per_sm(16, 1024, 1.3e9),
        "peak_flops_per_s.bf16": per_sm(16, 2048, 1.3e9),
        "peak_flops_per_s.fp16": per_sm(16, 2048, 1.3e9),
        "peak_flops_per_s.int8": per_sm(16, 4096, 1.3e9, 85 * T),  # 170 sparse / 2
        "vector_flops_per_s.fp32": per_sm(16, 256, 1.3e9, 5.3 * T),
        "sparse_peak_flops_per_s.int8": ds(170 * T),
        "dram_capacity_bytes": ds(64e9),
        "dram_bandwidth_bytes_per_s": ds(204.8e9),
        "l2_capacity_bytes": Fig(4 * MIB, how="4 MB, read as MiB"),
        "smem_per_sm_bytes": ds(192 * KIB),
        "register_file_per_sm_bytes": ds(256 * KIB),
        "sm_count": ds(16),
        "clock_hz_tensor": ds(1.3e9),
        "clock_hz_vector": ds(1.3e9),
    },
    "Jetson_AGX_Thor": {
        "peak_flops_per_s.bf16": both(None, 517e12 / 2, "FP8 / 2"),
        "peak_flops_per_s.fp16": both(None, 517e12 / 2, "FP8 / 2"),
        "peak_flops_per_s.fp8": ds(517 * T),
        "peak_flops_per_s.fp4": ds(1035 * T),
        "vector_flops_per_s.fp32": both(None, 2560 * 2 * 1.57e9, "2,560 cores x 2 x 1.57 GHz"),
        "sparse_peak_flops_per_s.fp4": ds(2070 * T),
        "dram_capacity_bytes": ds(128e9),
        "dram_bandwidth_bytes_per_s": ds(273e9),
        "l2_capacity_bytes": ds(32 * MIB),
        "smem_per_sm_bytes": ds(256 * KIB),
        "register_file_per_sm_bytes": ds(256 * KIB),
        "tensor_memory_per_sm_bytes": Fig(256 * KIB, how="PTX ISA: 128 lanes x 512 x 32 bit"),
        "sm_count": ds(20),
        "clock_hz_vector": ds(1.57e9),
    },
    "MI300X": {
        "peak_flops_per_s.fp64": per_sm(304, 256, 2.1e9, 163.4 * T),
        "peak_flops_per_s.fp32": per_sm(304, 256, 2.1e9, 163.4 * T),
        "peak_flops_per_s.tf32": per_sm(304, 1024, 2.1e9, 653.7 * T),
        "peak_flops_per_s.bf16": per_sm(304, 2048, 2.1e9, 1307.4 * T),
        "peak_flops_per_s.fp16": per_sm(304, 2048, 2.1e9, 1307.4 * T),
        "peak_flops_per_s.fp8": per_sm(304, 4096, 2.1e9, 2614.9 * T),
        "peak_flops_per_s.int8": per_sm(304, 4096, 2.1e9, 2614.9 * T),
        "vector_flops_per_s.fp64": per_sm(304, 128, 2.1e9, 81.7 * T),
        "vector_flops_per_s.fp32": per_sm(304, 256, 2.1e9, 163.4 * T),
        "sparse_peak_flops_per_s.tf32": ds(1307.4 * T),
        "sparse_peak_flops_per_s.bf16": ds(2614.9 * T),
        "sparse_peak_flops_per_s.fp16": ds(2614.9 * T),
        "sparse_peak_flops_per_s.fp8": ds(5229.8 * T),
        "sparse_peak_flops_per_s.int8": ds(5229.8 * T),
        "dram_capacity_bytes": ds(192e9),
        "dram_bandwidth_bytes_per_s": both(5.3e12, 8 * 1024 * 5.2e9 / 8,
                                           "8 HBM3 stacks x 1,024 bit x 5.2 Gb/s"),
        "l2_capacity_bytes": both(None, 256 * MIB + 8 * 4 * MIB,
                                  "256 MiB Infinity Cache + 8 x 4 MiB XCD L2"),
        "l2_bandwidth_bytes_per_s": both(17.2e12, 2048 * 8 * 2.1e9,
                                         "2 KB/clk per XCD x 8 XCDs x 2.1 GHz"),
        "smem_per_sm_bytes": Fig(96 * KIB, how="64 KiB LDS + 32 KiB L1 per CU"),
        "register_file_per_sm_bytes": ds(512 * KIB),
        "sm_count": ds(304),
        "clock_hz_tensor": ds(2.1e9),
        "clock_hz_vector": ds(2.1e9),
    },
    "TPU_v5e": {
        "peak_flops_per_s.bf16": ds(197 * T),
        "peak_flops_per_s.int8": ds(394 * T),  # the page has shown 393 and 394
        "dram_capacity_bytes": ds(16e9),
        "dram_bandwidth_bytes_per_s": both(819e9, 8.20e11, "JAX tpu_info: 8.20e11"),
        "l2_capacity_bytes": both(None, 128 * MIB + 1 * MIB, "VMEM 128 MiB + SMEM 1 MiB"),
    },
    "TPU_v5p": {
        "peak_flops_per_s.bf16": ds(459 * T),
        "peak_flops_per_s.int8": ds(918 * T),
        "dram_capacity_bytes": ds(95e9),
        "dram_bandwidth_bytes_per_s": both(2.765e12, 2.46e12, "JAX tpu_info: 2.46e12"),
        "l2_capacity_bytes": both(None, 2 * (64 * MIB + 1 * MIB),
                                  "2 cores x (VMEM 64 MiB + SMEM 1 MiB)"),
    },
}

SPECS = list_hardware_specs()


def _figures(spec: HardwareSpec) -> dict[str, float]:
    """Every populated figure of a spec, keyed as in spec files (``peak_flops_per_s.bf16``)."""
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    out: dict[str, float] = {}
    for field in FIGURE_FIELDS:
        value = data.get(field)
        if isinstance(value, dict):
            out.update({f"{field}.{p}": float(v) for p, v in value.items()})
        elif value is not None:
            out[field] = float(value)
    return out


ROWS = [(name, key, fig) for name, rows in FIGURES.items() for key, fig in rows.items()]


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_figure_has_a_row(spec: HardwareSpec) -> None:
    assert set(_figures(spec)) == set(FIGURES[spec.name])


@pytest.mark.parametrize(("name", "key", "fig"), ROWS, ids=[f"{n}-{k}" for n, k, _ in ROWS])
def test_figure_is_the_larger_of_datasheet_and_derivation(name: str, key: str, fig: Fig) -> None:
    value = _figures(load_hardware_spec(name))[key]
    assert value >= fig.expected * (1 - ROUND_DOWN), f"below {fig.how}: take the larger"
    assert value <= fig.expected * (1 + ROUND_UP), f"above {fig.how}: sparse as dense?"


def test_issue14_corrections() -> None:
    # the figures issue 14 found below the datasheet or its derivation
    fig = {s.name: _figures(s) for s in SPECS}
    assert fig["H100_PCIe"]["vector_flops_per_s.fp32"] == 51.2e12  # 114 x 256 x 1.755 GHz
    assert fig["L40S"]["peak_flops_per_s.bf16"] == 366.4e12  # 142 x 1024 x 2.52 GHz
    assert fig["L40S"]["peak_flops_per_s.tf32"] == 183.2e12
    assert fig["B200"]["vector_flops_per_s.fp32"] == 80e12  # 2024 edition, not 75
    assert fig["B200"]["peak_flops_per_s.tf32"] == 1125e12  # not 1,100
    assert fig["B200"]["dram_bandwidth_bytes_per_s"] == 8e12  # not 7.7
    assert fig["Jetson_AGX_Orin"]["vector_flops_per_s.fp32"] == 5.325e12  # 16 x 256 x 1.3 GHz
    assert fig["A100_SXM_80GB"]["vector_flops_per_s.fp64"] == 9.75e12  # 108 x 64 x 1.41 GHz
    assert fig["A100_SXM_80GB"]["vector_flops_per_s.fp16"] == 78e12  # whitepaper table 1
    assert fig["MI300X"]["dram_bandwidth_bytes_per_s"] == 5.325e12  # 8 x 1024 bit x 5.2 Gb/s
    assert fig["RTX_4090"]["peak_flops_per_s.fp16"] == 330.3e12  # FP16 accumulate
    assert fig["RTX_4090"]["peak_flops_per_s.fp8"] == 660.6e12
    # H100 L2: derived (5,120 B/clk x 50/40 x 1.98 GHz), no longer the unsourced 12 TB/s
    assert fig["H100_SXM"]["l2_bandwidth_bytes_per_s"] == pytest.approx(12.672e12)
