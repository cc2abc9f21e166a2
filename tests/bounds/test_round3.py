"""Round three of the soundness audit: IR programs against hand-computed minima.

Each row is a program in the form the frontends lower it, a size binding, and its
physical minimum on H100 SXM computed by hand: FLOPs at the dtype's dense peak and the
compulsory bytes at 3.35 TB/s. The fused bound must stay at or below the minimum (it is a
lower bound) and, where this round tightened it, reach the stated fraction of it.
"""

from __future__ import annotations

import pytest

from solar.bounds import compute_bounds
from solar.einsum import lift_to_einsum
from solar.ir import (
    Program,
    elide_masked_work,
    eliminate_dead_code,
    forward_copies,
    parse_program,
)

from .conftest import h100

B_H100 = 3.35e12
BF16 = 989.4e12

# Note [Size terms]: a sliding window whose width is a named size (``W = 128`` in the
# user's file), built from ``arange`` comparisons and filled with -inf. Only the band
# ``i - W < j <= i`` is kept, so both contractions run on the band's pairs.
BAND = """solar-ir 1
program band
size BH = 16
size L = 2048
size D = 64
size W = 128
input Q : bf16[BH, L, D]
input K : bf16[BH, L, D]
input V : bf16[BH, L, D]
temp ar : i64[L]
temp lo : i64[L, 1]
temp keep : bool[L, L]
temp s : bf16[BH, L, L]
temp f : bf16[BH, L, L]
temp p : bf16[BH, L, L]
output O : bf16[BH, L, D]
kernel arange { for i in 0 .. L { ar[i] = i } }
kernel sub { for i in 0 .. L { for u in 0 .. 1 { lo[i, u] = ar[i] - W } } }
kernel band { for i in 0 .. L { for j in 0 .. L {
  keep[i, j] = ar[j] <= ar[i] and ar[j] > lo[i, 0] } } }
kernel qk { local acc : f32[BH, L, L]
  for b in 0 .. BH { for i in 0 .. L { for j in 0 .. L { acc[b, i, j] = 0.0
    for d in 0 .. D { acc[b, i, j] += f32(Q[b, i, d]) * f32(K[b, j, d]) }
    s[b, i, j] = acc[b, i, j] } } } }
kernel fill { for b in 0 .. BH { for i in 0 .. L { for j in 0 .. L {
  f[b, i, j] = select(not keep[i, j], -inf, s[b, i, j]) } } } }
kernel softmax { local m : f32[BH, L]
  local z : f32[BH, L]
  local e : f32[BH, L, L]
  for b in 0 .. BH { for i in 0 .. L { m[b, i] = -inf
    for j in 0 .. L { m[b, i] max= f32(f[b, i, j]) }
    z[b, i] = 0.0
    for j in 0 .. L { e[b, i, j] = exp(f32(f[b, i, j]) - m[b, i])
      z[b, i] += e[b, i, j] }
    for j in 0 .. L { p[b, i, j] = e[b, i, j] / z[b, i] } } } }
kernel pv { local acc2 : f32[BH, L, D]
  for b in 0 .. BH { for i in 0 .. L { for d in 0 .. D { acc2[b, i, d] = 0.0
    for j in 0 .. L { acc2[b, i, d] += f32(p[b, i, j]) * f32(V[b, j, d]) }
    O[b, i, d] = acc2[b, i, d] } } } }
"""
BAND_PAIRS = sum(min(i + 1, 128) for i in range(2048))  # 254,016 of 4,194,304


def _cat(k: int) -> str:
    """``torch.cat`` of ``k`` tensors ``[1, N]`` along dim 0, N a size."""
    ins = "\n".join(f"input x{i} : f32[1, N]" for i in range(k))
    pieces = " ".join(f"for a{i} in 0 .. 1 {{ for b{i} in 0 .. N {{ "
                      f"Y[a{i} + {i}, b{i}] = x{i}[a{i}, b{i}] }} }}" for i in range(k))
    return f"solar-ir 1\nprogram cat\nsize N = 4096\n{ins}\noutput Y : f32[{k}, N]\n" \
           f"kernel cat {{ {pieces} }}\n"


def _upcast_mm(dtype: str, wide: str = "f32") -> str:
    """``a.float() @ b.float()``: the casts in kernels of their own, as eager runs them."""
    return f"""solar-ir 1
program upcast
size M = 8192
input A : {dtype}[M, M]
input B : {dtype}[M, M]
temp A2 : {wide}[M, M]
temp B2 : {wide}[M, M]
output C : {wide}[M, M]
kernel ca {{ for i in 0 .. M {{ for j in 0 .. M {{ A2[i, j] = {wide}(A[i, j]) }} }} }}
kernel cb {{ for i in 0 .. M {{ for j in 0 .. M {{ B2[i, j] = {wide}(B[i, j]) }} }} }}
kernel mm {{ for i in 0 .. M {{ for j in 0 .. M {{ C[i, j] = 0.0
  for k in 0 .. M {{ C[i, j] += A2[i, k] * B2[k, j] }} }} }} }}
"""


# name: (program text, hand FLOPs on the bf16 tensor cores, hand compulsory bytes,
#        least fraction of the hand minimum time the fused bound reaches)
CASES: dict[str, tuple[str, int, int, float]] = {
    # contractions on the band only: 2 x 2 BH * pairs * D; Q, K, V read, O written (bf16).
    # Before: dense (17.6 GFLOP at L = 2048, 17.36 us against a 5.008 us minimum)
    "sliding_window_size_named": (BAND, 2 * 2 * 16 * BAND_PAIRS * 64, 4 * 2 * 16 * 2048 * 64,
                                  0.99),
    # Note [Disjoint boxes]: 256 rows read and 256 rows written. Before: one row written
    # (the pieces' union was their max), 1/2 of the minimum
    "cat_of_256_rows": (_cat(256), 0, 2 * 4 * 256 * 4096, 1.0),
    # Note [Copies], exact widening: bf16 x bf16 products are exact in fp32, so bf16 tensor
    # cores accumulating in fp32 do this arithmetic (1.111 ms); A, B read as bf16, C
    # written in fp32. Before: the fp32 temps made it an fp32 matmul at 3xTF32 (6.668 ms)
    "bf16_upcast_matmul": (_upcast_mm("bf16"), 2 * 8192**3, 2 * 2 * 8192**2 + 4 * 8192**2,
                           1.0),
    "f16_upcast_matmul": (_upcast_mm("f16"), 2 * 8192**3, 2 * 2 * 8192**2 + 4 * 8192**2, 1.0),
}


def _prepared(text: str) -> Program:
    return eliminate_dead_code(forward_copies(elide_masked_work(parse_program(text))))


@pytest.mark.parametrize("case", list(CASES))
def test_fused_bound_lies_below_the_hand_minimum(case: str) -> None:
    text, flops, nbytes, fraction = CASES[case]
    minimum = max(flops / BF16, nbytes / B_H100)
    bound = compute_bounds(lift_to_einsum(_prepared(text)), h100(), model="fused", cache="cold")
    assert bound.dram_bytes <= nbytes
    assert bound.time_s <= minimum * (1 + 1e-9)
    assert bound.time_s >= fraction * minimum


@pytest.mark.parametrize(("dtype", "wide", "pipe"), [
    ("bf16", "f32", "tensor:bf16"), ("f16", "f32", "tensor:fp16"),
    # fp8 tensor cores accumulate below fp32 accuracy, and an fp64 product is not an fp32
    # one: those casts stay kernels and the matmul stays at its written precision
    ("f8e4m3", "f32", "tensor:3xtf32"), ("f32", "f64", "tensor:fp64"),
])
def test_only_exact_widening_casts_are_read_through(dtype: str, wide: str, pipe: str) -> None:
    bound = compute_bounds(lift_to_einsum(_prepared(_upcast_mm(dtype, wide))), h100(),
                           model="fused", cache="cold")
    busiest = max(bound.compute_time_s_by_pipe, key=bound.compute_time_s_by_pipe.__getitem__)
    assert busiest.label == pipe


def test_band_with_a_size_named_width_keeps_only_the_band() -> None:
    # the two contractions count exactly the band's multiply-adds at the size binding
    graph = lift_to_einsum(_prepared(BAND))
    sizes = {"BH": 16, "L": 2048, "D": 64, "W": 128}
    tensor = sum(n.flops.evaluate(sizes) for n in graph.nodes if n.kernel in ("qk", "pv"))
    assert tensor == 2 * 2 * 16 * BAND_PAIRS * 64
