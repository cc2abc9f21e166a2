"""Repeated identical work is counted once (issue 28 item 4, Note [Repeated work]).

A loop variable that is a whole subscript of the target and appears nowhere else (value,
other subscripts, guards, loop bounds) writes one value many times, when the kernel
writes none of the tensors the value reads. Each row: a program, its FLOPs by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.einsum import lift_to_einsum
from solar.ir import parse_program, verify_program

HEAD = """solar-ir 1
program p
input X : f32[1, 16]
input W : f32[16, 8]
input V : f32[8]
temp T : f32[8]
temp Y : f32[32, 8]
temp Z : f32[8, 8]
"""

# name: (kernel text, FLOPs by hand)
CASES = {
    # x.expand(32, 16).contiguous() @ w after the copy is forwarded: one row, 2 * 16 * 8
    "expanded_matmul": ("""kernel mm { for i in 0 .. 32 { for n in 0 .. 8 { Y[i, n] = 0.0
      for k in 0 .. 16 { Y[i, n] += X[0, k] * W[k, n] } } } }""", 2 * 16 * 8),
    # a broadcast element-wise op: one product per column
    "broadcast_scale": ("""kernel b { for i in 0 .. 32 { for n in 0 .. 8 {
      Y[i, n] = V[n] * 2.0 } } }""", 8),
    # i in the value: every row differs
    "row_dependent": ("""kernel b { for i in 0 .. 32 { for n in 0 .. 8 {
      Y[i, n] = V[n] * W[i // 2, n] } } }""", 32 * 8),
    # i in a guard: not a plain repetition (left per point)
    "guarded": ("""kernel b { for i in 0 .. 32 { for n in 0 .. 8 { if i < 5 {
      Y[i, n] = V[n] * 2.0 } } } }""", 5 * 8),
    # i inside a compound subscript: each output mixes it with n
    "compound_subscript": ("""kernel b { for i in 0 .. 8 { for n in 0 .. 8 {
      Z[(i + n) % 8, n] = V[n] * 2.0 } } }""", 8 * 8),
    # the value reads a tensor this kernel writes inside the loop: T differs per i
    "reads_what_it_writes": ("""kernel b { for i in 0 .. 8 { for n in 0 .. 8 {
      T[n] = W[i, n] * 2.0 }
      for n in 0 .. 8 { Z[i, n] = T[n] * 3.0 } } }""", 8 * 8 + 8 * 8),
    # a sequential loop is never taken as a repetition
    "seq_loop": ("""kernel b { seq for i in 0 .. 8 { for n in 0 .. 8 {
      Z[i, n] = V[n] * 2.0 } } }""", 8 * 8),
}


def _flops(kernel: str) -> float:
    p = parse_program(HEAD + kernel + "\n")
    verify_program(p)
    g = lift_to_einsum(p)
    return sum(n.flops.evaluate({}) for n in g.nodes)


@pytest.mark.parametrize("case", list(CASES))
def test_repeated_work_hand_counts(case: str) -> None:
    kernel, flops = CASES[case]
    assert _flops(kernel) == flops


def test_repeated_flops_are_kept_for_the_independent_check() -> None:
    p = parse_program(HEAD + CASES["expanded_matmul"][0] + "\n")
    g = lift_to_einsum(p)
    # a per-point counter (FlopCounterMode) sees 2 * 32 * 16 * 8
    assert sum(n.flops.evaluate({}) for n in g.nodes) + g.repeated_flops({}) == 2 * 32 * 16 * 8


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.integers(1, 5), st.booleans())
def test_a_broadcast_loop_costs_what_one_iteration_does(r: int, n: int, k: int,
                                                        outer: bool) -> None:
    """Adding a broadcast loop (outermost or innermost) never changes the FLOPs."""
    def prog(reps: int) -> str:
        body = ("Y[a, j] = 0.0 for q in 0 .. " + str(k)
                + " { Y[a, j] += X[0, q] * W[q, j] }")
        loops = [f"for a in 0 .. {reps}", f"for j in 0 .. {n}"]
        if not outer:
            loops.reverse()
        nest = f"{loops[0]} {{ {loops[1]} {{ {body} }} }}"
        return (f"solar-ir 1\nprogram p\ninput X : f32[1, {k}]\ninput W : f32[{k}, {n}]\n"
                f"output Y : f32[{reps}, {n}]\nkernel mm {{ {nest} }}\n")

    flops = [sum(nd.flops.evaluate({}) for nd in lift_to_einsum(parse_program(prog(x))).nodes)
             for x in (1, r)]
    assert flops[0] == flops[1] == 2 * n * k
