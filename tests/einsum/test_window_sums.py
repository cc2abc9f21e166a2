"""The convolution flag: window sums (TF32 under `default`) vs flattened dims (fp32-accurate)."""

from __future__ import annotations

import pytest

from solar.einsum import lift_to_einsum
from solar.ir import parse_program

HEADS = """solar-ir 1
program heads
size B = 2
size S = 8
size H = 2
size D = 4
input QKV : f32[B * S, 3 * H * D]
output O : f32[B, H, S, S]
kernel qk {
  for b in 0 .. B { for h in 0 .. H { for i in 0 .. S { for j in 0 .. %(J)s {
    O[b, h, i, j] = 0.0
    for d in 0 .. D {
      O[b, h, i, j] += QKV[b * S + i, h * D + d] * QKV[b * S + j, h * D + d + H * D]
    }
  } } } }
}"""

CONV = """solar-ir 1
program conv
size W = 16
size K = 3
input X : f32[W + 2]
input F : f32[K]
output Y : f32[W]
kernel taps {
  for w in 0 .. W {
    Y[w] = 0.0
    for k in 0 .. K { Y[w] += X[w + k] * F[k] }
  }
}"""


@pytest.mark.parametrize("j_hi", ["S", "i + 1"])
def test_heads_split_from_a_packed_projection_are_no_window(j_hi: str) -> None:
    # b*S + i and h*D + d name distinct elements (i in 0..S, d in 0..D; a causal j in
    # 0..i+1 <= S too): a matmul, charged fp32-accurate (3xTF32 on H100), not as a conv
    graph = lift_to_einsum(parse_program(HEADS % {"J": j_hi}))
    (node,) = [n for n in graph.nodes if n.work == "contraction"]
    assert not node.convolution


def test_a_sliding_window_is_a_convolution() -> None:
    graph = lift_to_einsum(parse_program(CONV))
    (node,) = [n for n in graph.nodes if n.work == "contraction"]
    assert node.convolution


ONE = """solar-ir 1
program one
size H = 2
size D = 4
size S = 8
input A : f32[S, 64]
input B : f32[S, 64]
output O : f32[S, S]
kernel mm {
  for i in 0 .. S { for j in 0 .. S {
    O[i, j] = 0.0
    for h in 0 .. H { for d in 0 .. D { for r in 0 .. 3 {
      O[i, j] += A[i, %(IDX)s] * B[j, h * D + d]
    } } }
  } }
}"""

# subscript of A: convolution (a window) or not, by hand
SUBSCRIPTS = {
    "h * D + d": False,                       # a flattened pair: distinct elements
    "(h * D + d) // 8": False,                # a digit of one (packed q/k/v split)
    "(h * D + d) % 8": False,
    "((h * D + d) * 3 + r) % 64": False,      # nested: ((h, d), r) in mixed radix
    "(r * H + h) * D + d": False,
    "d + D * h": False,                       # either order of the terms
    "2 * d + r": True,                        # stride-2 window, 3 taps overlap
    "d + r": True,                            # stride-1 window
    "(d + r) // 2": True,                     # a digit of a window is still one
    "(h * D + d) * 2 + r": True,              # r in 0..3 overflows its radix 2
    "h * D + d + r": True,                    # three loop terms: doubt keeps TF32
}


@pytest.mark.parametrize("idx", list(SUBSCRIPTS))
def test_window_or_linearisation_table(idx: str) -> None:
    graph = lift_to_einsum(parse_program(ONE % {"IDX": idx}))
    (node,) = [n for n in graph.nodes if n.work == "contraction"]
    assert node.convolution is SUBSCRIPTS[idx]
