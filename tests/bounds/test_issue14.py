"""Issue 14 regressions (items 2, 3, 4 and the contract), each with its hand arithmetic."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sample_sizes import small_ir_text

from solar.bounds import (
    BOUND_MODELS,
    PRECISION_POLICIES,
    CompiledCosts,
    Pipe,
    compile_costs,
    compute_bounds,
    resolve_pipe,
)
from solar.bounds.costs import alternative_algorithms
from solar.einsum import EinsumGraph, lift_to_einsum
from solar.hw import HardwareSpec, Precision, list_hardware_specs, load_hardware_spec
from solar.ir import DType, parse_program

from .conftest import ADD, LINEAR_GELU, SOFTMAX, graph, matmul_text

ROOT = Path(__file__).resolve().parents[2]
REL = 1e-9


@functools.cache
def _sample(name: str) -> EinsumGraph:
    return lift_to_einsum(parse_program(small_ir_text(ROOT / "samples" / "ir" / f"{name}.alir")))


@functools.cache
def _compiled(text: str) -> CompiledCosts:
    return compile_costs(graph(text))


# ----------------------------------------------------------------- (2) fp32 attention

# 8 x 16 heads, L = 4096, Dh = 128, fp32. Q K^T and P V are 2 * B*H * L * L * Dh FLOPs each:
# 2 * 128 * 4096^2 * 128 = 549,755,813,888; both: 1,099,511,627,776 FLOPs.
ATT = {"B": 8, "Hh": 16, "L": 4096, "Dh": 128}
ATT_MM_FLOPS = 2 * (2 * 8 * 16 * 4096 * 4096 * 128)
# PyTorch's default fp32 SDPA on sm80+ (memory-efficient kernel) runs 3xTF32 on tensor
# cores: 494.7 / 3 = 164.9 TFLOP/s on H100, so 1.0995e12 / 164.9e12 = 6.668 ms.
ATT_3XTF32_S = ATT_MM_FLOPS / (494.7e12 / 3)
# what the bound printed before (CUDA-core fp32 at 67 TFLOP/s): 16.41 ms
ATT_OLD_S = ATT_MM_FLOPS / 67e12


@pytest.mark.parametrize("model", list(BOUND_MODELS))
@pytest.mark.parametrize("cache", ["warm", "cold"])
def test_fp32_attention_is_not_above_3xtf32(model: str, cache: str) -> None:
    h100 = load_hardware_spec("H100_SXM")
    b = compute_bounds(_sample("attention"), h100, model=model, sizes=ATT,  # type: ignore[arg-type]
                       cache=cache)  # type: ignore[arg-type]
    assert b.time_s <= ATT_3XTF32_S * (1 + REL)
    # the contractions run on the 3xTF32 pipe, and bind: the softmax (about 5 FLOPs per
    # score, 1.07e10 FLOPs at 67 TFLOP/s = 0.16 ms) and Q, K, V, O (1.07 GB at 3.35 TB/s =
    # 0.32 ms) are far below
    tf32x3 = Pipe("tensor", Precision.TF32, 3)
    assert b.compute_time_s_by_pipe[tf32x3] == pytest.approx(ATT_3XTF32_S)
    assert b.time_s == pytest.approx(ATT_3XTF32_S)
    assert b.time_s < ATT_OLD_S / 2.4


# Every pipe the policy used to send to the fp32 vector unit, per library kernel:
# (work, dtype, convolution, policy, label of the pipe charged on H100, peak TFLOP/s)
FP32_WORK = [
    # cuBLAS SGEMM runs on CUDA cores, but a CUTLASS 3xTF32 GEMM (and PyTorch's own fp32
    # attention) is fp32-accurate on tensor cores: 494.7 / 3 = 164.9 > 67
    ("contraction", DType.F32, False, "default", "tensor:3xtf32", 494.7 / 3),
    # cuDNN with allow_tf32 (PyTorch's default for convolutions): TF32
    ("contraction", DType.F32, True, "default", "tensor:tf32", 494.7),
    # strict-fp32 is the what-if without tensor cores
    ("contraction", DType.F32, False, "strict-fp32", "vector:fp32", 67.0),
    # elementwise and reductions run on the CUDA cores
    ("vector", DType.F32, False, "default", "vector:fp32", 67.0),
    # integer work: integer ALUs, at most the fp32 rate
    ("vector", DType.I64, False, "default", "vector:fp32", 67.0),
    # fp16 elementwise: 2 x fp32 on Hopper (whitepaper table 3)
    ("vector", DType.F16, False, "default", "vector:fp16", 134.0),
]


@pytest.mark.parametrize(("work", "dtype", "conv", "policy", "label", "tflops"), FP32_WORK)
def test_fp32_work_runs_on_the_fastest_allowed_unit(
    work: str, dtype: DType, conv: bool, policy: str, label: str, tflops: float
) -> None:
    r = resolve_pipe(load_hardware_spec("H100_SXM"), work, dtype, conv, policy)  # type: ignore[arg-type]
    assert r.label == label
    assert r.peak_flops_per_s == pytest.approx(tflops * 1e12)
    assert not r.fallback


@pytest.mark.parametrize("spec", list_hardware_specs(), ids=lambda s: s.name)
def test_fp32_accurate_contraction_never_slower_than_any_fp32_accurate_pipe(
    spec: HardwareSpec,
) -> None:
    r = resolve_pipe(spec, "contraction", DType.F32, False, "default")
    for p in (Pipe("vector", Precision.FP32), Pipe("tensor", Precision.FP32),
              Pipe("tensor", Precision.TF32, 3), Pipe("tensor", Precision.BF16, 6)):
        figure = spec.peak_for(p.precision, p.unit)
        if figure is not None:
            assert r.peak_flops_per_s >= figure / p.passes * (1 - REL), p.label


def test_fp32_matmul_on_l40s_stays_on_cuda_cores() -> None:
    # L40S: TF32 183.2 / 3 = 61.1 < FP32 91.6, so the CUDA cores are the fastest fp32 path
    r = resolve_pipe(load_hardware_spec("L40S"), "contraction", DType.F32, False, "default")
    assert (r.label, r.peak_flops_per_s) == ("vector:fp32", 91.6e12)


def test_an_unpublished_policy_pipe_still_falls_back_to_the_device_maximum() -> None:
    # Thor publishes no TF32 figure: an fp32 convolution (TF32 allowed) could run at the
    # unpublished TF32 rate, faster than the pipes it has (6xBF16: 258.5 / 6 = 43.1), so
    # the fallback (the highest float figure, FP4 1,035 TFLOP/s) keeps a lower bound
    thor = load_hardware_spec("Jetson_AGX_Thor")
    conv = resolve_pipe(thor, "contraction", DType.F32, True, "default")
    assert (conv.label, conv.peak_flops_per_s) == ("tensor:tf32", 1035e12)
    assert conv.fallback
    mm = resolve_pipe(thor, "contraction", DType.F32, False, "default")
    assert (mm.label, mm.peak_flops_per_s) == ("tensor:6xbf16", 258.5e12 / 6)


def test_tpu_fp32_matmul_keeps_one_bf16_pass() -> None:
    # XLA's DEFAULT precision on TPU: fp32 matmuls as one bf16 MXU pass (197 TFLOP/s)
    r = resolve_pipe(load_hardware_spec("TPU_v5e"), "contraction", DType.F32, False, "default")
    assert (r.label, r.peak_flops_per_s) == ("tensor:bf16", 197e12)


# ------------------------------------------------------- (3) A100 fp16 (non-tensor) peak

def _fp16_chain(n_ops: int) -> str:
    expr = "X[i]"
    for _ in range(n_ops // 2):
        expr = f"({expr} * 1.001 + 0.5)"
    return f"""solar-ir 1
program chain
size N = 16777216
input X : f16[N]
output Y : f16[N]
kernel chain {{ for i in 0 .. N {{ Y[i] = {expr} }} }}
"""


def test_a100_fp16_chain_uses_the_published_78_tflops() -> None:
    a100 = load_hardware_spec("A100_SXM_80GB")
    r = resolve_pipe(a100, "vector", DType.F16, False, "default")
    assert (r.peak_flops_per_s, r.fallback) == (78e12, "")  # whitepaper table 1
    # 200 FLOPs per element on 2^24 fp16 elements: 3,355,443,200 FLOPs / 78 TFLOP/s =
    # 43.0 us; the 4 B moved per element (67.1 MB) take 32.9 us at 2.039 TB/s.
    # The old 2 x fp32 = 39 TFLOP/s fallback printed 86.0 us, 2x too high.
    b = compute_bounds(graph(_fp16_chain(200)), a100, model="fused", cache="cold")
    flops = 200 * 2**24
    assert b.flops == flops
    assert b.time_s == pytest.approx(flops / 78e12)
    assert b.time_s < flops / 39e12 / 1.9


@pytest.mark.parametrize("spec", list_hardware_specs(), ids=lambda s: s.name)
@pytest.mark.parametrize("dtype", [DType.F16, DType.BF16])
def test_16_bit_vector_fallback_is_never_below_the_largest_published_ratio(
    spec: HardwareSpec, dtype: DType
) -> None:
    r = resolve_pipe(spec, "vector", dtype, False, "default")
    published = spec.peak_for(Precision.FP16 if dtype == DType.F16 else Precision.BF16,
                              "vector")
    if published is not None:
        assert r.peak_flops_per_s == published and not r.fallback
    elif spec.vector_flops_per_s:
        # no figure: 4 x the fastest vector figure (GA100's 78 / 19.5 is the largest ratio)
        assert r.peak_flops_per_s == 4 * max(spec.vector_flops_per_s.values())
        assert r.fallback
    else:  # TPUs: the highest float figure of the device (the bf16 MXU)
        assert r.peak_flops_per_s == max(
            v for p, v in spec.tensor_flops_per_s.items() if p != Precision.INT8)


# ------------------------------------------------------------- (4) warm never above cold

def _unknown_l2(spec: HardwareSpec) -> HardwareSpec:
    return spec.model_copy(update={"l2_capacity_bytes": None})


def test_tpu_warm_is_not_slower_than_cold() -> None:
    # LINEAR_GELU's 268 MB temp H: cold, the unfused model let it stay on chip between
    # kernels (unknown capacity = unlimited) while warm charged it all to DRAM (capacity 0).
    # Both now read an unknown capacity as unlimited; with TPU v5e's 129 MiB of VMEM + SMEM
    # (the spec's figure now) H spills beyond it under both states alike.
    for spec in (load_hardware_spec("TPU_v5e"), _unknown_l2(load_hardware_spec("TPU_v5e")),
                 _unknown_l2(load_hardware_spec("H100_SXM"))):
        cold = compute_bounds(graph(LINEAR_GELU), spec, model="unfused", cache="cold")
        warm = compute_bounds(graph(LINEAR_GELU), spec, model="unfused", cache="warm")
        assert warm.time_s <= cold.time_s * (1 + REL), spec.name


def test_tpu_unfused_hand_arithmetic() -> None:
    # TPU v5e, LINEAR_GELU, cold, default policy: the fp32 matmul as one bf16 pass,
    # 137.4 GFLOP / 197 TFLOP/s = 697.7 us. C = 129 MiB = 135,266,304 B. addmm: X, W, b from
    # DRAM (67.1 MB), H written (268.4 MB, of which 133.2 MB beyond C): 200.3 MB at 820 GB/s
    # = 244.3 us < 697.7 us. gelu: reads H (133.2 MB beyond C), writes Y (268.4 MB):
    # 401.6 MB / 820 GB/s = 489.8 us. Warm: addmm moves 0 + 133.2 MB and gelu 133.2 + 133.2.
    tpu = load_hardware_spec("TPU_v5e")
    c, h, cold_in = 135266304, 8192 * 8192 * 4, (8192 * 1024 * 2 + 8192) * 4
    mm = 2 * 8192 * 8192 * 1024 / 197e12
    gelu_cold = (h - c + h) / 820e9
    b = compute_bounds(graph(LINEAR_GELU), tpu, model="unfused", cache="cold")
    assert b.time_s == pytest.approx(max(mm, (cold_in + h - c) / 820e9) + gelu_cold)
    w = compute_bounds(graph(LINEAR_GELU), tpu, model="unfused", cache="warm")
    assert w.time_s == pytest.approx(mm + 2 * (h - c) / 820e9)


def _variants() -> list[HardwareSpec]:
    out = []
    for s in list_hardware_specs():
        out += [s, _unknown_l2(s), s.model_copy(update={"l2_bandwidth_bytes_per_s": None})]
    return out


PROGRAMS = st.sampled_from(
    [matmul_text(), matmul_text("bf16"), ADD, LINEAR_GELU, SOFTMAX,
     *(small_ir_text(ROOT / "samples" / "ir" / f"{n}.alir")
       for n in ("attention", "conv2d", "layernorm", "lstm_cell", "batchnorm"))])


@given(PROGRAMS, st.sampled_from(PRECISION_POLICIES), st.sampled_from(_variants()),
       st.sampled_from(list(BOUND_MODELS)))
def test_warm_is_never_slower_than_cold(text: str, policy: str, spec: HardwareSpec,
                                        model: str) -> None:
    g = _compiled(text)
    kw = {"model": model, "precision_policy": policy}
    warm = compute_bounds(g, spec, cache="warm", **kw)  # type: ignore[arg-type]
    cold = compute_bounds(g, spec, cache="cold", **kw)  # type: ignore[arg-type]
    assert warm.time_s <= cold.time_s * (1 + REL)
    assert warm.dram_bytes <= cold.dram_bytes * (1 + REL)


@pytest.mark.parametrize("spec", _variants(), ids=lambda s: s.name)
def test_warm_is_never_slower_than_cold_on_every_spec(spec: HardwareSpec) -> None:
    # deterministic sweep: every bundled spec (and its unknown-L2 variants), every model
    # and policy, on the program with a temp larger than every L2
    g = _compiled(LINEAR_GELU)
    for policy in PRECISION_POLICIES:
        for model in BOUND_MODELS:
            kw = {"model": model, "precision_policy": policy}
            warm = compute_bounds(g, spec, cache="warm", **kw)  # type: ignore[arg-type]
            cold = compute_bounds(g, spec, cache="cold", **kw)  # type: ignore[arg-type]
            assert warm.time_s <= cold.time_s * (1 + REL), (policy, model)


# ---------------------------------------------------------------------- the contract

CONV3X3_S1 = """solar-ir 1
program conv
size N = 1
size C = 8
size K = 8
size H = 16
size W = 16
input X : f32[N, C, H, W]
param Wt : f32[K, C, 3, 3]
output Y : f32[N, K, H, W]
kernel conv2d { for n in 0 .. N { for k in 0 .. K { for h in 0 .. H { for w in 0 .. W {
  Y[n, k, h, w] = 0.0
  for c in 0 .. C { for r in 0 .. 3 { for s in 0 .. 3 {
    if 0 <= h + r - 1 and h + r - 1 < H and 0 <= w + s - 1 and w + s - 1 < W {
      Y[n, k, h, w] += X[n, c, h + r - 1, w + s - 1] * Wt[k, c, r, s] } } } } } } } } }
"""

SYRK = """solar-ir 1
program syrk
size N = 64
size K = 32
input A : f32[N, K]
output C : f32[N, N]
kernel syrk { for i in 0 .. N { for j in 0 .. N { C[i, j] = 0.0
  for k in 0 .. K { C[i, j] += A[i, k] * A[j, k] } } } }
"""

CONTRACT_CASES = [
    # (program, kernel, kind flagged, or None)
    (CONV3X3_S1, "conv2d", "stride-1 convolution"),  # Winograd F(2x2, 3x3), FFT
    (CONV3X3_S1.replace("h + r - 1", "2 * h + r - 1").replace("w + s - 1", "2 * w + s - 1"),
     "conv2d", None),  # stride 2: no Winograd
    (SYRK, "syrk", "symmetric product"),
    (matmul_text(), "mm", "matrix product"),  # Strassen-like
    (ADD, "add", None),
    (SOFTMAX, "softmax", None),  # a dot-product-free row reduction
]


@pytest.mark.parametrize(("text", "kernel", "kind"), CONTRACT_CASES)
def test_alternative_algorithms_are_flagged(text: str, kernel: str, kind: str | None) -> None:
    lines = alternative_algorithms(graph(text))
    if kind is None:
        assert lines == ()
        return
    (line,) = lines
    assert line.startswith(f"{kind} in `{kernel}`")
    assert "not covered by the bound" in line
    for model in BOUND_MODELS:
        b = compute_bounds(graph(text), load_hardware_spec("H100_SXM"), model=model)
        assert line in b.assumptions


def test_pooling_flags_only_overlapping_windows() -> None:
    # samples/ir/avgpool2d.alir: 3x3 windows at stride 2 overlap (separable passes share
    # the middle row and column); a 2x2 window at stride 2 (or group norm's `g*Cg + c`)
    # is disjoint: nothing to share
    (line,) = alternative_algorithms(_sample("avgpool2d"))
    assert line.startswith("window reduction in `avgpool2d`")
    disjoint = small_ir_text(ROOT / "samples" / "ir" / "avgpool2d.alir").replace(
        "0 .. 3", "0 .. 2")
    assert alternative_algorithms(lift_to_einsum(parse_program(disjoint))) == ()
