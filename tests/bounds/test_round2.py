"""Issue 14, round two (bug 5 and the tightenings), each with its hand arithmetic."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solar.bounds import (
    BOUND_MODELS,
    PRECISION_POLICIES,
    CompiledCosts,
    compile_costs,
    compute_bounds,
    recast_costs,
)
from solar.hw import HardwareSpec, list_hardware_specs, load_hardware_spec

from .conftest import ADD, LINEAR_GELU, SOFTMAX, graph, h100, matmul_text

MIB = 1024 * 1024
B_H100 = 3.35e12


@functools.cache
def _compiled(text: str) -> CompiledCosts:
    return compile_costs(graph(text))


def _add(n: int) -> str:
    return ADD.replace("size N = 67108864", f"size N = {n}")


# ------------------------------------------------------------- periodic warm loop


def test_periodic_loop_moves_reads_plus_writes_minus_capacity() -> None:
    # Y = X + 1 over 10 Mi fp32: R = W = 40 MiB, C = 50 MiB. A repetition of the loop can
    # keep at most 50 MiB cached across its boundary, each byte saving one transfer:
    # DRAM >= 40 + 40 - 50 = 30 MiB = 31,457,280 B, 9.390 us at 3.35 TB/s. The old
    # (R - C)+ + (W - C)+ was 0.
    c = _compiled(_add(10 * MIB))
    for model in BOUND_MODELS:
        b = compute_bounds(c, h100(), model=model, cache="warm")
        # (the unfused bound is raised to the fused one; its own per-kernel DRAM bytes stay)
        assert b.dram_bytes == (0.0 if model == "unfused" else 30 * MIB), model
        assert b.time_s == pytest.approx(30 * MIB / B_H100, rel=1e-12)
        assert b.time_s == pytest.approx(9.390e-6, rel=1e-3)
    # below C in total: nothing is proven to reach DRAM
    small = compute_bounds(_compiled(_add(6 * MIB)), h100(), model="fused", cache="warm")
    assert small.dram_bytes == 0.0


def test_cache_aware_warm_credit_is_one_capacity_for_everything() -> None:
    # SOFTMAX: B = 4 rows of N = 2**26 fp32 (256 MiB each). Cold: R = W = 1 GiB, and each
    # row exceeds S = 121,634,816 B (pinned H100), so the barrier re-reads 4 * (2**28 - S)
    # = 587,202,560 B. Warm: one credit of C = 50 MiB for all of it (was C on the
    # compulsory traffic and S again on the re-reads).
    s, c = 121634816, 50 * MIB
    cold_total = 2 * 2**30 + 4 * (2**28 - s)
    b = compute_bounds(_compiled(SOFTMAX), h100(), model="cache-aware", cache="warm")
    assert b.dram_bytes == cold_total - c
    cold = compute_bounds(_compiled(SOFTMAX), h100(), model="cache-aware", cache="cold")
    assert cold.dram_bytes == cold_total


PROGRAMS = st.sampled_from([matmul_text(), matmul_text("bf16"), ADD, LINEAR_GELU, SOFTMAX,
                            _add(10 * MIB)])


def _old_warm(reads: float, writes: float, cap: float | None) -> float:
    if cap is None:
        return 0.0
    return max(0.0, reads - cap) + max(0.0, writes - cap)


@given(PROGRAMS, st.sampled_from(list_hardware_specs()), st.sampled_from(PRECISION_POLICIES))
def test_warm_credit_is_tighter_and_ordered(text: str, spec: HardwareSpec, policy: str) -> None:
    """Over all specs: the periodic credit is never below the old one, warm <= cold, and
    cache-aware >= fused >= 0 under both cache states."""
    c = _compiled(text)
    costs = recast_costs(c, policy).evaluate()  # bf16/fp16/fp8 cast the tensors too
    r = float(costs.compulsory_read_bytes.sum())
    w = float(costs.compulsory_written_bytes.sum())
    kw = {"precision_policy": policy}
    fused = compute_bounds(c, spec, model="fused", cache="warm", **kw)  # type: ignore[arg-type]
    assert fused.dram_bytes >= _old_warm(r, w, spec.l2_capacity_bytes)
    assert fused.dram_bytes <= r + w
    for cache in ("warm", "cold"):
        f = compute_bounds(c, spec, model="fused", cache=cache, **kw)  # type: ignore[arg-type]
        ca = compute_bounds(c, spec, model="cache-aware", cache=cache, **kw)  # type: ignore[arg-type]
        assert ca.dram_bytes >= f.dram_bytes
        assert ca.time_s >= f.time_s


# ------------------------------------------------------------- whole sectors

STRIDED = """solar-ir 1
program strided_sum
input X : {dtype}[4096, 4096]
output Y : {dtype}[4096]
kernel sum {{ for i in 0 .. 4096 {{ Y[i] = 0.0
  for j in 0 .. 512 {{ Y[i] += X[i, {sub}] }} }} }}
"""


@pytest.mark.parametrize(("dtype", "sub", "read_bytes"), [
    # x[:, ::8] fp32: 4096 * 512 elements, each alone in its 32-byte sector (w = 8,
    # g = 8, m = 1): 4096 * 512 * 32 = 67,108,864 B, the whole tensor (was 8,388,608 B)
    ("f32", "8 * j", 4096 * 512 * 32),
    # fp32, stride 8 offset 3: the same sectors, shifted
    ("f32", "8 * j + 3", 4096 * 512 * 32),
    # bf16 stride 8: w = 16 elements per sector, m = ceil(16 / 8) = 2 touched per
    # sector: 4096 * 512 / 2 sectors * 32 B = 33,554,432 B (elements: 4,194,304 B)
    ("bf16", "8 * j", 4096 * 512 // 2 * 32),
    # contiguous: no change, 4096 * 512 * 4 B
    ("f32", "j", 4096 * 512 * 4),
])
def test_strided_reads_move_whole_sectors(dtype: str, sub: str, read_bytes: int) -> None:
    text = STRIDED.format(dtype=dtype, sub=sub)
    itemsize = 4 if dtype == "f32" else 2
    b = compute_bounds(_compiled(text), h100(), model="fused", cache="cold")
    assert b.dram_bytes == read_bytes + 4096 * itemsize
    assert b.time_s == pytest.approx((read_bytes + 4096 * itemsize) / B_H100, rel=1e-12)


def test_sector_rounding_needs_a_divisible_row() -> None:
    # a row of 4100 fp32 with stride 8: offsets of consecutive rows are not congruent
    # mod 8 (4100 = 4 mod 8), so only g = gcd(8, 4100) = 4 is proven: m = 2, factor 4
    text = STRIDED.format(dtype="f32", sub="8 * j").replace("[4096, 4096]", "[4096, 4100]")
    b = compute_bounds(_compiled(text), h100(), model="fused", cache="cold")
    assert b.dram_bytes == 4096 * 512 * 4 * 4 + 4096 * 4


@given(st.sampled_from(["f32", "bf16", "f64", "i8"]), st.integers(1, 16), st.integers(0, 7),
       st.sampled_from([4096, 4100, 4104]))
def test_sector_charge_is_between_elements_and_the_tensor(dtype: str, stride: int,
                                                           offset: int, row: int) -> None:
    """Charged bytes are at least the elements' bytes, never more than the tensor's, and
    never more than the sectors really touched (enumerated, for a 32-byte aligned base)."""
    n = (row - offset - 1) // stride + 1
    n = min(n, 512)
    text = (STRIDED.format(dtype=dtype, sub=f"{stride} * j + {offset}")
            .replace("[4096, 4096]", f"[64, {row}]").replace("Y : " + dtype + "[4096]",
                                                             "Y : " + dtype + "[64]")
            .replace("0 .. 4096", "0 .. 64").replace("0 .. 512", f"0 .. {n}"))
    itemsize = {"f32": 4, "bf16": 2, "f64": 8, "i8": 1}[dtype]
    costs = _compiled(text).evaluate()
    x_bytes = float(costs.compulsory_read_bytes[0])
    elems = 64 * n
    assert elems * itemsize <= x_bytes <= 64 * row * itemsize
    offsets = {(i * row + stride * j + offset) * itemsize // 32 for i in range(64)
               for j in range(n)}
    assert x_bytes <= len(offsets) * 32


# ------------------------------------------------------------- on-chip capacity


def test_onchip_capacity_counts_tensor_memory_and_every_cache() -> None:
    # B200: 148 SMs x (256 KiB registers + 256 KiB L1/SMEM + 256 KiB TMEM) + 126 MiB L2
    assert load_hardware_spec("B200").onchip_capacity_bytes == 148 * 768 * 1024 + 126 * MIB
    # MI300X: 304 CUs x (512 KiB VGPR + 96 KiB LDS/L1) + 256 MiB Infinity Cache + 32 MiB L2
    assert load_hardware_spec("MI300X").onchip_capacity_bytes == 304 * 608 * 1024 + 288 * MIB
    # H100 SXM: no TMEM: 132 x 512 KiB + 50 MiB
    assert load_hardware_spec("H100_SXM").onchip_capacity_bytes == 132 * 512 * 1024 + 50 * MIB


def _mm(m: int, n: int, k: int) -> str:
    return (matmul_text().replace("size M = 4096", f"size M = {m}")
            .replace("size N = 4096", f"size N = {n}").replace("size K = 4096", f"size K = {k}"))


@given(st.sampled_from(list_hardware_specs()), st.sampled_from([512, 4096, 65536]),
       st.sampled_from([512, 4096, 65536]), st.sampled_from([64, 4096, 1 << 20]))
def test_cache_aware_matmul_is_below_a_concrete_tiling(spec: HardwareSpec, m: int, n: int,
                                                       k: int) -> None:
    """Cold cache: fused <= cache-aware <= the traffic of square output tiles t x t with
    3 t^2 words on chip (each tile reads a t x K panel of A and a K x t panel of B and
    writes itself once: 2MNK / t + MN words, plus nothing else)."""
    c = _compiled(_mm(m, n, k))
    fused = compute_bounds(c, spec, model="fused", cache="cold")
    ca = compute_bounds(c, spec, model="cache-aware", cache="cold")
    assert ca.dram_bytes >= fused.dram_bytes
    cap = spec.onchip_capacity_bytes
    if cap is None:
        assert ca.dram_bytes == fused.dram_bytes
        return
    t = max(1, int((cap / 4 / 3) ** 0.5))
    tiled = (2 * m * n * k / min(t, m, n) + m * n) * 4
    assert ca.dram_bytes <= max(fused.dram_bytes, tiled)
