"""Constant masks (solar.ir.masks, Note [Constant masks]): folded, the hidden work skipped."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solar.bounds import compute_bounds, pipe_labels
from solar.einsum import lift_to_einsum
from solar.hw import HardwareSpec, list_hardware_specs, load_hardware_spec
from solar.ir import (
    Program,
    elide_masked_work,
    eliminate_dead_code,
    eval_int,
    parse_program,
    print_program,
    verify_program,
)
from solar.validate import execute_program

# Hand-written causal attention as the PyTorch tracer lowers it: a mask built in forward
# from ones(T, T).tril(), compared with 0, masked_fill, softmax, P @ V.
CAUSAL = """solar-ir 1
program causal
input Q : f32[{b}, {t}, {d}]
input K : f32[{b}, {t}, {d}]
input V : f32[{b}, {t}, {d}]
temp S : f32[{b}, {t}, {t}]
temp ones : f32[{t}, {t}]
temp tri : f32[{t}, {t}]
temp eq : bool[{t}, {t}]
temp M : f32[{b}, {t}, {t}]
temp P : f32[{b}, {t}, {t}]
output O : f32[{b}, {t}, {d}]
kernel qk {{ for b in 0 .. {b} {{ for i in 0 .. {t} {{ for j in 0 .. {t} {{ S[b, i, j] = 0.0
  for k in 0 .. {d} {{ S[b, i, j] += Q[b, i, k] * K[b, j, k] }} }} }} }} }}
kernel fill {{ for i in 0 .. {t} {{ for j in 0 .. {t} {{ ones[i, j] = 1.0 }} }} }}
kernel tril {{ for i in 0 .. {t} {{ for j in 0 .. {t} {{
  if j <= i + {k} {{ tri[i, j] = ones[i, j] }}
  if j > i + {k} {{ tri[i, j] = 0.0 }} }} }} }}
kernel eqk {{ for i in 0 .. {t} {{ for j in 0 .. {t} {{ eq[i, j] = tri[i, j] == 0.0 }} }} }}
kernel masked_fill {{ for b in 0 .. {b} {{ for i in 0 .. {t} {{ for j in 0 .. {t} {{
  M[b, i, j] = select(eq[i, j], -inf, S[b, i, j]) }} }} }} }}
kernel softmax {{
  local m : f32[{b}, {t}]
  local s : f32[{b}, {t}]
  local e : f32[{b}, {t}, {t}]
  for b in 0 .. {b} {{ for i in 0 .. {t} {{
    m[b, i] = -inf
    for j in 0 .. {t} {{ m[b, i] max= M[b, i, j] }}
    s[b, i] = 0.0
    for j in 0 .. {t} {{ e[b, i, j] = exp(M[b, i, j] - m[b, i])
      s[b, i] += e[b, i, j] }}
    for j in 0 .. {t} {{ P[b, i, j] = e[b, i, j] / s[b, i] }} }} }} }}
kernel pv {{ for b in 0 .. {b} {{ for i in 0 .. {t} {{ for c in 0 .. {d} {{ O[b, i, c] = 0.0
  for j in 0 .. {t} {{ O[b, i, c] += P[b, i, j] * V[b, j, c] }} }} }} }} }}
"""


def _causal(b: int = 8, t: int = 64, d: int = 32, k: int = 0) -> str:
    return CAUSAL.format(b=b, t=t, d=d, k=k)


def _bounds_program(text: str) -> tuple[Program, Program]:
    p = parse_program(text)
    verify_program(p)
    q = eliminate_dead_code(elide_masked_work(p))
    verify_program(q)
    return p, q


def _run(p: Program, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = {t.name: rng.standard_normal([eval_int(s, {}) for s in t.shape]).astype(np.float32)
              for t in p.tensors if t.role == "input"}
    return execute_program(p, inputs)


def test_causal_mask_halves_the_contractions_hand_arithmetic() -> None:
    # B = 8, T = 64, D = 32. Dense: QK^T and PV each 8 * 64 * 64 * 32 * 2 = 2,097,152 FLOPs.
    # Under the causal mask each keeps the triangle j <= i: 64 * 65 / 2 = 2,080 of the 4,096
    # (i, j) pairs, 8 * 2,080 * 32 * 2 = 1,064,960 FLOPs each, 2,129,920 together.
    p, q = _bounds_program(_causal())
    h100 = load_hardware_spec("H100_SXM")
    dense = compute_bounds(lift_to_einsum(eliminate_dead_code(p)), h100, model="fused")
    masked = compute_bounds(lift_to_einsum(q), h100, model="fused")
    assert pipe_labels(dense.flops_by_pipe)["tensor:3xtf32"] == 2 * 2_097_152
    assert pipe_labels(masked.flops_by_pipe)["tensor:3xtf32"] == 2 * 1_064_960
    # the mask is computed from indices: its kernels are gone, nothing reads a mask tensor
    text = print_program(q)
    for name in ("kernel fill", "kernel tril", "kernel eqk", "eq["):
        assert name not in text
    # vector work, on the triangle only, per point: max (1), exp(x - m) (2), sum (1),
    # divide (1): 5 FLOPs, 8 * 2,080 * 5 = 83,200; the masked_fill's select on `i < j` is
    # index-only and free (Note [Index-only selects]) (dense: 8 * 4,096 * (1 select + 5)
    # + 4,096 compares of the mask with 0 = 200,704)
    assert pipe_labels(masked.flops_by_pipe)["vector:fp32"] == 8 * 2080 * 5
    assert pipe_labels(dense.flops_by_pipe)["vector:fp32"] == 8 * 4096 * 6 + 4096
    # and the outputs are the same, exactly
    a, b = _run(p), _run(q)
    np.testing.assert_array_equal(a["O"], b["O"])


def test_a_value_dependent_mask_is_left_alone() -> None:
    # the mask is an input: nothing is known at capture time
    text = _causal().replace("temp eq : bool", "input eq : bool").replace(
        "kernel eqk { for i in 0 .. 64 { for j in 0 .. 64 { eq[i, j] = tri[i, j] == 0.0 } } }",
        "")
    p = parse_program(text)
    q = elide_masked_work(eliminate_dead_code(p))
    assert print_program(q) == print_program(eliminate_dead_code(p))


def test_a_fully_masked_row_is_not_assumed_finite() -> None:
    # k = -1 masks the diagonal too: row 0 has no unmasked entry, its max is -inf and
    # exp(-inf - -inf) is NaN, so the exp/sum/divide terms must not be folded to 0; the
    # max itself and Q K^T are still guarded (skipping -inf in a max is exact)
    p, q = _bounds_program(_causal(k=-1))
    text = print_program(q)
    assert "e[b, i, j] = exp(" in text
    assert "if j <= i + -1" not in text.split("kernel pv")[1]
    a, b = _run(p), _run(q)
    np.testing.assert_array_equal(np.isnan(a["O"]), np.isnan(b["O"]))
    np.testing.assert_array_equal(a["O"][~np.isnan(a["O"])], b["O"][~np.isnan(b["O"])])


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.integers(2, 12), st.integers(1, 4), st.integers(-2, 3),
       st.integers(0, 2**16), st.sampled_from(list_hardware_specs()))
def test_masked_work_is_skipped_only_where_provably_masked(b: int, t: int, d: int, k: int,
                                                            seed: int, spec: HardwareSpec) -> None:
    """For every diagonal, the rewritten program computes the same outputs (NaN rows
    included, up to summation order) and never charges more than the dense one."""
    p, q = _bounds_program(_causal(b, t, d, k))
    a, c = _run(p, seed), _run(q, seed)
    np.testing.assert_array_equal(np.isnan(a["O"]), np.isnan(c["O"]))
    # (the executor may sum in another order once the masked terms are gone)
    np.testing.assert_allclose(a["O"][~np.isnan(a["O"])], c["O"][~np.isnan(c["O"])],
                               rtol=1e-5, atol=1e-6)
    for model in ("unfused", "fused", "cache-aware"):
        dense = compute_bounds(lift_to_einsum(eliminate_dead_code(p)), spec, model=model)
        masked = compute_bounds(lift_to_einsum(q), spec, model=model)
        if dense.counts_exact:
            # (a value-dependent select is counted at its cheaper branch, a lower bound
            # that the index-only condition of the folded mask can make exact and larger)
            assert masked.flops <= dense.flops
            assert masked.time_s <= dense.time_s * (1 + 1e-12)


def test_a_read_outside_the_mask_keeps_the_work() -> None:
    # S is also read, unmasked, by a value-dependent `if` (a count of positive scores):
    # its upper triangle is live, so Q K^T stays dense
    text = _causal(2, 8, 4).replace(
        "output O : f32[2, 8, 4]", "output O : f32[2, 8, 4]\noutput Z : f32[2]").replace(
        "kernel pv {", "kernel pos { for b in 0 .. 2 { Z[b] = 0.0 for i in 0 .. 8 {"
        " for j in 0 .. 8 { if S[b, i, j] > 0.0 { Z[b] += 1.0 } } } } }\nkernel pv {")
    p, q = _bounds_program(text)
    qk = print_program(q).split("kernel qk")[1].split("kernel")[0]
    assert "if " not in qk
    a, b = _run(p), _run(q)
    np.testing.assert_array_equal(a["Z"], b["Z"])
    np.testing.assert_allclose(a["O"], b["O"], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- bands
def _band(b: int = 8, t: int = 64, d: int = 32, k: int = 0, w: int = 15) -> str:
    """Sliding-window attention: the causal mask's triangle cut to ``i - w <= j``, as
    ``ones(T, T).tril(k).triu(-w)`` lowers (Note [Conjunctions] in `solar.ir.masks`)."""
    triu = (f"kernel triu {{ for i in 0 .. {t} {{ for j in 0 .. {t} {{\n"
            f"  if j >= i - {w} {{ band[i, j] = tri[i, j] }}\n"
            f"  if j < i - {w} {{ band[i, j] = 0.0 }} }} }} }}\n")
    return (_causal(b, t, d, k)
            .replace("temp eq :", f"temp band : f32[{t}, {t}]\ntemp eq :")
            .replace("kernel eqk", triu + "kernel eqk")
            .replace("eq[i, j] = tri[i, j] == 0.0", "eq[i, j] = band[i, j] == 0.0"))


def _pairs(t: int, k: int, w: int) -> int:
    i, j = np.indices((t, t))
    return int(((j <= i + k) & (j >= i - w)).sum())


def test_a_sliding_window_charges_the_band_hand_arithmetic() -> None:
    # B = 8, T = 64, D = 32, window 16 (i - 15 <= j <= i): rows keep 1, 2, ..., 16 keys,
    # then 16: 136 + 48 * 16 = 904 of the 4,096 (i, j) pairs. QK^T and PV each
    # 8 * 904 * 32 * 2 = 462,848 FLOPs; per kept point max, exp(x - m), sum, divide: 5.
    assert _pairs(64, 0, 15) == 904
    p, q = _bounds_program(_band())
    h100 = load_hardware_spec("H100_SXM")
    dense = compute_bounds(lift_to_einsum(eliminate_dead_code(p)), h100, model="fused")
    masked = compute_bounds(lift_to_einsum(q), h100, model="fused")
    assert pipe_labels(dense.flops_by_pipe)["tensor:3xtf32"] == 2 * 2_097_152
    assert pipe_labels(masked.flops_by_pipe)["tensor:3xtf32"] == 2 * 462_848
    assert pipe_labels(masked.flops_by_pipe)["vector:fp32"] == 8 * 904 * 5
    text = print_program(q)
    for name in ("kernel fill", "kernel tril", "kernel triu", "kernel eqk", "eq["):
        assert name not in text
    a, c = _run(p), _run(q)
    np.testing.assert_allclose(a["O"], c["O"], rtol=1e-5, atol=1e-6)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 2), st.integers(2, 10), st.integers(1, 3), st.integers(-2, 3),
       st.integers(-1, 6), st.integers(0, 2**16))
def test_a_band_is_skipped_only_where_provably_masked(b: int, t: int, d: int, k: int, w: int,
                                                      seed: int) -> None:
    """For every band, the rewritten program computes the same outputs (NaN rows
    included) and never charges more; with the diagonal in the band, Q K^T is charged
    exactly on the band's pairs."""
    p, q = _bounds_program(_band(b, t, d, k, w))
    a, c = _run(p, seed), _run(q, seed)
    np.testing.assert_array_equal(np.isnan(a["O"]), np.isnan(c["O"]))
    np.testing.assert_allclose(a["O"][~np.isnan(a["O"])], c["O"][~np.isnan(c["O"])],
                               rtol=1e-5, atol=1e-6)
    spec = load_hardware_spec("H100_SXM")
    dense = compute_bounds(lift_to_einsum(eliminate_dead_code(p)), spec, model="fused")
    masked = compute_bounds(lift_to_einsum(q), spec, model="fused")
    assert masked.flops <= dense.flops
    unfused = compute_bounds(lift_to_einsum(q), spec, model="unfused")
    qk = next(kb for kb in unfused.kernels if kb.name == "qk")
    assert qk.flops == 2 * b * d * _pairs(t, k, w)
