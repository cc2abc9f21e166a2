"""Shared programs and specs for bound tests."""

from __future__ import annotations

import functools

from solar.einsum import EinsumGraph, lift_to_einsum
from solar.hw import HardwareSpec, Precision, load_hardware_spec
from solar.ir import parse_program

# The H100 SXM figures the hand computations use, pinned so that a later edit of the
# bundled YAML cannot silently change them.
H100_TENSOR = {"fp64": 67.0e12, "tf32": 494.7e12, "bf16": 989.4e12, "fp16": 989.4e12,
               "fp8": 1979.0e12, "int8": 1979.0e12}
H100_VECTOR = {"fp64": 34.0e12, "fp32": 67.0e12}
H100_FIGURES: dict[str, object] = {
    "tensor_flops_per_s": {Precision(k): v for k, v in H100_TENSOR.items()},
    "vector_flops_per_s": {Precision(k): v for k, v in H100_VECTOR.items()},
    "dram_bandwidth_bytes_per_s": 3.35e12,
    "l2_capacity_bytes": 52428800.0,
    "l2_bandwidth_bytes_per_s": 12.0e12,
    "smem_per_sm_bytes": 262144.0,
    "register_file_per_sm_bytes": 262144.0,
    "sm_count": 132,
}


@functools.cache
def h100() -> HardwareSpec:
    """H100 SXM with the pinned figures (on-chip 132 * 512 KiB + 50 MiB = 121,634,816 B)."""
    return load_hardware_spec("H100_SXM").model_copy(update=H100_FIGURES)


def matmul_text(dtype: str = "f32") -> str:
    return f"""solar-ir 1
program mm
size M = 4096
size N = 4096
size K = 4096
input A : {dtype}[M, K]
input B : {dtype}[K, N]
output C : {dtype}[M, N]
kernel mm {{ for m in 0 .. M {{ for n in 0 .. N {{ C[m, n] = 0.0
  for k in 0 .. K {{ C[m, n] += A[m, k] * B[k, n] }} }} }} }}
"""


ADD = """solar-ir 1
program add
size N = 67108864
input X : f32[N]
output Y : f32[N]
kernel add { for i in 0 .. N { Y[i] = X[i] + 1.0 } }
"""

LINEAR_GELU = """solar-ir 1
program linear_gelu
size M = 8192
size N = 8192
size K = 1024
input X : f32[M, K]
param W : f32[N, K]
param b : f32[N]
temp H : f32[M, N]
output Y : f32[M, N]
kernel addmm { for m in 0 .. M { for n in 0 .. N { H[m, n] = b[n]
  for k in 0 .. K { H[m, n] += X[m, k] * W[n, k] } } } }
kernel gelu { for m in 0 .. M { for n in 0 .. N {
  Y[m, n] = 0.5 * H[m, n] * (1.0 + erf(H[m, n] * 0.7071067811865476)) } } }
"""

SOFTMAX = """solar-ir 1
program softmax
size B = 4
size N = 67108864
input X : f32[B, N]
output Y : f32[B, N]
kernel softmax {
  local mx : f32[B]
  local sm : f32[B]
  for b in 0 .. B {
    mx[b] = -inf
    for n in 0 .. N { mx[b] max= X[b, n] }
    sm[b] = 0.0
    for n in 0 .. N { Y[b, n] = exp(X[b, n] - mx[b])
      sm[b] += Y[b, n] }
    for n in 0 .. N { Y[b, n] = Y[b, n] / sm[b] }
  }
}
"""


@functools.cache
def graph(text: str) -> EinsumGraph:
    """Lift (cached) an inline program."""
    return lift_to_einsum(parse_program(text))
