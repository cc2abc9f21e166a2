"""The executor against independent numpy references: samples and inline programs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from sample_sizes import small_ir_text

from solar.ir import parse_program
from solar.validate import execute_program, random_inputs

from .references import REFERENCES, make_inputs

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "ir").glob("*.alir"))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_matches_reference(path: Path) -> None:
    program = parse_program(small_ir_text(path), filename=str(path))
    inputs = make_inputs(path.stem, program, np.random.default_rng(0))
    got = execute_program(program, inputs)
    expected = REFERENCES[path.stem](inputs)
    assert set(got) == set(expected)
    for name, ref in expected.items():
        np.testing.assert_allclose(got[name], ref, rtol=2e-5, atol=2e-5, err_msg=name)


def test_every_sample_has_a_reference() -> None:
    assert {p.stem for p in SAMPLES} <= set(REFERENCES)


def _run(text: str, **inputs: np.ndarray) -> dict[str, np.ndarray]:
    return execute_program(parse_program(text), inputs)


def _prog(body: str, decls: str, sizes: str = "") -> str:
    return f"solar-ir 1\nprogram t\n{sizes}\n{decls}\nkernel k {{\n{body}\n}}\n"


RNG = np.random.default_rng(7)
X44 = RNG.standard_normal((4, 4)).astype(np.float32)
X10 = RNG.standard_normal(10).astype(np.float32)
X8 = RNG.standard_normal(8).astype(np.float32)


# name, program text, inputs, expected outputs (computed independently with numpy)
INLINE_CASES = [
    (
        "step_loop",
        _prog(
            "for i in 0 .. 10 { Y[i] = 0.0 }\nfor i in 1 .. 10 step 3 { Y[i] = X[i] * 2.0 }",
            "input X : f32[10]\noutput Y : f32[10]",
        ),
        {"X": X10},
        {"Y": np.where(np.isin(np.arange(10), [1, 4, 7]), X10 * 2, 0)},
    ),
    (
        "guard_padding_shift",
        _prog(
            "for i in 0 .. 10 { Y[i] = 0.0\n if i >= 2 { Y[i] = X[i - 2] } }",
            "input X : f32[10]\noutput Y : f32[10]",
        ),
        {"X": X10},
        {"Y": np.concatenate([[0, 0], X10[:-2]])},
    ),
    (
        "floor_div_mod",
        _prog(
            "for e in 0 .. 8 { Y[e // 4, e % 4] = X[e] }",
            "input X : f32[8]\noutput Y : f32[2, 4]",
        ),
        {"X": X8},
        {"Y": X8.reshape(2, 4)},
    ),
    (
        "negative_floor_semantics",
        _prog(
            "for i in 0 .. 8 { Y[i] = f32((i - 5) // 2) + f32((i - 5) % 3) * 10.0 }",
            "output Y : f32[8]",
        ),
        {},
        {"Y": np.array([((i - 5) // 2) + ((i - 5) % 3) * 10.0 for i in range(8)])},
    ),
    (
        "triangular_lower",
        _prog(
            "for i in 0 .. 4 { for j in 0 .. 4 { Y[i, j] = 0.0 }\n"
            " for j in 0 .. i + 1 { Y[i, j] = X[i, j] } }",
            "input X : f32[4, 4]\noutput Y : f32[4, 4]",
        ),
        {"X": X44},
        {"Y": np.tril(X44)},
    ),
    (
        "triangular_reduce_step",
        _prog(
            "for i in 0 .. 4 { S[i] = 0.0\n for j in i .. 4 step 2 { S[i] += X[i, j] } }",
            "input X : f32[4, 4]\noutput S : f32[4]",
        ),
        {"X": X44},
        {"S": np.array([X44[i, i::2].sum() for i in range(4)])},
    ),
    (
        "gather_scatter_add",
        _prog(
            "for v in 0 .. 5 { H[v] = 0.0 }\nfor i in 0 .. 8 { H[idx[i]] += X[i] }",
            "input idx : i64[8]\ninput X : f32[8]\noutput H : f32[5]",
        ),
        {"idx": np.array([0, 1, 1, 4, 4, 4, 2, 0]), "X": X8},
        {"H": np.bincount([0, 1, 1, 4, 4, 4, 2, 0], weights=X8, minlength=5)},
    ),
    (
        "scatter_max_collisions",
        _prog(
            "for v in 0 .. 3 { M[v] = -inf }\nfor i in 0 .. 8 { M[i % 3] max= X[i] }",
            "input X : f32[8]\noutput M : f32[3]",
        ),
        {"X": X8},
        {"M": np.array([X8[0::3].max(), X8[1::3].max(), X8[2::3].max()])},
    ),
    (
        "value_dependent_if_select",
        _prog(
            "for i in 0 .. 10 { Y[i] = select(X[i] > 0.0, X[i], 0.0)\n"
            " if X[i] < -0.5 { Y[i] = -1.0 } }",
            "input X : f32[10]\noutput Y : f32[10]",
        ),
        {"X": X10},
        {"Y": np.where(X10 < -0.5, -1.0, np.maximum(X10, 0))},
    ),
    (
        "short_circuit_guard",
        _prog(
            "for i in 0 .. 12 { Y[i] = 0.0\n if i < 10 and X[i] > 0.0 { Y[i] = 1.0 } }",
            "input X : f32[10]\noutput Y : f32[12]",
        ),
        {"X": X10},
        {"Y": np.concatenate([(X10 > 0).astype(np.float32), [0, 0]])},
    ),
    (
        "scalar_local_privatized",
        _prog(
            "local acc : f32[]\nfor i in 0 .. 4 { for j in 0 .. 4 { acc[] = 0.0\n"
            " for k in 0 .. 4 { acc[] += X[i, k] * X[k, j] }\n C[i, j] = acc[] } }",
            "input X : f32[4, 4]\noutput C : f32[4, 4]",
        ),
        {"X": X44},
        {"C": X44 @ X44},
    ),
    (
        "running_sum_plain_loop_runs_sequentially",
        _prog(
            "local acc : f32[]\nacc[] = 0.0\nfor i in 0 .. 10 { acc[] += X[i]\n Y[i] = acc[] }",
            "input X : f32[10]\noutput Y : f32[10]",
        ),
        {"X": X10},
        {"Y": np.cumsum(X10)},
    ),
    (
        "seq_scan_max",
        _prog(
            "for b in 0 .. 4 { Y[b, 0] = X[b, 0]\n seq for i in 1 .. 4 "
            "{ Y[b, i] = max(Y[b, i - 1], X[b, i]) } }",
            "input X : f32[4, 4]\noutput Y : f32[4, 4]",
        ),
        {"X": X44},
        {"Y": np.maximum.accumulate(X44, axis=1)},
    ),
    (
        "seq_recurrence_not_a_scan",
        _prog(
            "Y[0] = X[0]\nseq for i in 1 .. 10 { Y[i] = 0.5 * Y[i - 1] + X[i] }",
            "input X : f32[10]\noutput Y : f32[10]",
        ),
        {"X": X10},
        {"Y": np.array([sum(0.5 ** (i - j) * X10[j] for j in range(i + 1)) for i in range(10)])},
    ),
    (
        "seq_triangular_inside_parallel",
        _prog(
            "for i in 0 .. 4 { Y[i, 0] = X[i, 0]\n seq for j in 1 .. i + 1 "
            "{ Y[i, j] = Y[i, j - 1] * X[i, j] }\n for j in i + 1 .. 4 { Y[i, j] = 0.0 } }",
            "input X : f32[4, 4]\noutput Y : f32[4, 4]",
        ),
        {"X": X44},
        {"Y": np.tril(np.cumprod(X44, axis=1))},
    ),
    (
        "reduce_multiplicity_and_product",
        _prog(
            "C[] = 0.0\nP[] = 1.0\nfor i in 0 .. 3 { for j in 0 .. 4 { C[] += 1.0\n P[] *= 2.0 } }",
            "output C : f32[]\noutput P : f32[]",
        ),
        {},
        {"C": np.float32(12.0), "P": np.float32(4096.0)},
    ),
    (
        "diagonal_and_transpose_views",
        _prog(
            "for i in 0 .. 4 { D[i] = X[i, i]\n for j in 0 .. 4 { T[j, i] = X[i, j] } }",
            "input X : f32[4, 4]\noutput D : f32[4]\noutput T : f32[4, 4]",
        ),
        {"X": X44},
        {"D": np.diag(X44), "T": X44.T},
    ),
    (
        "reverse_negative_stride",
        _prog("for i in 0 .. 10 { Y[i] = X[9 - i] }", "input X : f32[10]\noutput Y : f32[10]"),
        {"X": X10},
        {"Y": X10[::-1]},
    ),
    (
        "index_and_size_as_values",
        _prog(
            "for i in 0 .. N { Y[i] = X[i] * f32(i) / N }",
            "input X : f32[N]\noutput Y : f32[N]",
            "size N = 10",
        ),
        {"X": X10},
        {"Y": X10 * np.arange(10) / 10},
    ),
    (
        "math_functions",
        _prog(
            "for i in 0 .. 8 { Y[i] = exp(X[i]) + tanh(X[i]) + sigmoid(X[i]) + erf(X[i])"
            " + abs(X[i]) + pow(abs(X[i]), 1.5) + atan2(X[i], 2.0) + fmod(X[i], 0.3) }",
            "input X : f32[8]\noutput Y : f32[8]",
        ),
        {"X": X8},
        {
            "Y": np.exp(X8)
            + np.tanh(X8)
            + 1 / (1 + np.exp(-X8))
            + np.array([math.erf(float(v)) for v in X8])
            + np.abs(X8)
            + np.abs(X8) ** 1.5
            + np.arctan2(X8, 2.0)
            + np.fmod(X8, 0.3)
        },
    ),
    (
        "triangular_step_varying_start",
        _prog(
            "for i in 0 .. 4 { for j in 0 .. 8 { Y[i, j] = 0.0 }\n"
            " for j in i .. 8 step 3 { Y[i, j] = 1.0 } }",
            "output Y : f32[4, 8]",
        ),
        {},
        {
            "Y": np.array(
                [[1.0 if j >= i and (j - i) % 3 == 0 else 0.0 for j in range(8)] for i in range(4)]
            )
        },
    ),
    (
        "temp_carried_through_plain_loop_runs_sequentially",
        "solar-ir 1\nprogram t\ninput X : f32[10]\ntemp S : f32[]\noutput Y : f32[10]\n"
        "kernel k {\nS[] = 0.0\nfor i in 0 .. 10 { S[] = S[] + X[i]\n Y[i] = S[] }\n}\n",
        {"X": X10},
        {"Y": np.cumsum(X10)},
    ),
    (
        "guarded_windows_pool_and_conv",
        _prog(
            "for i in 0 .. 10 { M[i] = -inf\n A[i] = 0.0\n for r in 0 .. 3 {"
            " if 0 <= i + r - 1 and i + r - 1 < 10 { M[i] max= X[i + r - 1]\n"
            " A[i] += X[i + r - 1] * W[r] } } }",
            "input X : f32[10]\ninput W : f32[3]\noutput M : f32[10]\noutput A : f32[10]",
        ),
        {"X": X10, "W": np.array([1.0, -2.0, 0.5], dtype=np.float32)},
        {
            "M": np.max(
                np.lib.stride_tricks.sliding_window_view(
                    np.pad(X10, 1, constant_values=-np.inf), 3
                ),
                axis=1,
            ),
            "A": np.lib.stride_tricks.sliding_window_view(np.pad(X10, 1), 3)
            @ np.array([1.0, -2.0, 0.5]),
        },
    ),
    (
        "guarded_contraction_with_inf_falls_back",
        _prog(
            "for i in 0 .. 4 { S[i] = 0.0\n for j in 0 .. 4 { if j <= i {"
            " S[i] += X[i, j] * Z[j] } } }",
            "input X : f32[4, 4]\ninput Z : f32[4]\noutput S : f32[4]",
        ),
        {"X": X44, "Z": np.array([1.0, 2.0, 3.0, np.inf], dtype=np.float32)},
        {
            "S": np.array(
                [
                    sum(X44[i, j] * [1.0, 2.0, 3.0, np.inf][j] for j in range(i + 1))
                    for i in range(4)
                ]
            )
        },
    ),
    (
        "masked_min_and_product_and_int_count",
        _prog(
            "for i in 0 .. 4 { m[i] = inf\n p[i] = 1.0\n c[i] = 0\n"
            " for j in 0 .. 4 { if X[i, j] > 0.0 { m[i] min= X[i, j]\n"
            " p[i] *= X[i, j]\n c[i] += 1 } } }",
            "input X : f32[4, 4]\noutput m : f32[4]\noutput p : f32[4]\noutput c : i32[4]",
        ),
        {"X": X44},
        {
            "m": np.where(X44 > 0, X44, np.inf).min(axis=1),
            "p": np.where(X44 > 0, X44, 1.0).prod(axis=1),
            "c": (X44 > 0).sum(axis=1),
        },
    ),
    (
        "integer_outputs_wrap",
        _prog(
            "for i in 0 .. 4 { Y[i] = i8(I[i] * 100) }",
            "input I : i32[4]\noutput Y : i8[4]",
        ),
        {"I": np.array([1, 2, 3, -2], dtype=np.int32)},
        {"Y": np.array([100, 200, 300, -200]).astype(np.int8)},
    ),
]


@pytest.mark.parametrize(
    ("text", "inputs", "expected"),
    [case[1:] for case in INLINE_CASES],
    ids=[case[0] for case in INLINE_CASES],
)
def test_inline_program(
    text: str, inputs: dict[str, np.ndarray], expected: dict[str, np.ndarray]
) -> None:
    got = _run(text, **inputs)
    for name, ref in expected.items():
        assert got[name].shape == np.shape(ref), name
        np.testing.assert_allclose(got[name], ref, rtol=1e-5, atol=1e-5, err_msg=name)


def test_output_dtypes_follow_declarations() -> None:
    text = _prog(
        "for i in 0 .. 4 { A[i] = X[i]\n B[i] = X[i]\n C[i] = i32(X[i])\n D[i] = X[i] > 0.0 }",
        "input X : f32[4]\noutput A : f16[4]\noutput B : bf16[4]\n"
        "output C : i32[4]\noutput D : bool[4]",
    )
    got = _run(text, X=np.array([1.0001, -2.5, 3.7, 0.1], dtype=np.float32))
    assert got["A"].dtype == np.float16
    assert got["B"].dtype == np.float32
    assert got["B"].tolist() == [1.0, -2.5, 3.703125, 0.10009765625]
    assert got["C"].tolist() == [1, -2, 3, 0]
    assert got["D"].tolist() == [True, False, True, True]


def test_narrow_dtype_rounds_on_store_not_per_addend() -> None:
    # 1 + 2**-9 is not a bf16 value; sixteen such addends accumulate in f32 and round once.
    text = _prog(
        "S[] = 1.0\nfor i in 0 .. 16 { S[] += X[i] }",
        "input X : f32[16]\noutput S : bf16[]",
    )
    got = _run(text, X=np.full(16, 2.0**-9, dtype=np.float32))
    assert float(got["S"]) == 1.03125


def test_random_inputs_respect_index_ranges() -> None:
    text = _prog(
        "for i in 0 .. 6 { Y[i] = E[idx[i] + 1] }",
        "input idx : i64[6]\nparam E : f32[V]\noutput Y : f32[6]",
        "size V = 3",
    )
    program = parse_program(text)
    inputs = random_inputs(program, None, np.random.default_rng(0))
    assert set(inputs) == {"idx", "E"}
    assert ((inputs["idx"] >= 0) & (inputs["idx"] <= 1)).all()
    got = execute_program(program, inputs)
    np.testing.assert_array_equal(got["Y"], inputs["E"][inputs["idx"] + 1])


def test_sizes_override_changes_shapes() -> None:
    path = next(p for p in SAMPLES if p.stem == "matmul")
    program = parse_program(path.read_text(encoding="utf-8"))
    inputs = random_inputs(program, {"M": 5, "N": 3, "K": 7}, np.random.default_rng(0))
    got = execute_program(program, inputs, sizes={"M": 5, "N": 3, "K": 7})
    np.testing.assert_allclose(got["C"], inputs["A"] @ inputs["B"], rtol=1e-5, atol=1e-6)


def test_large_nests_are_chunked(monkeypatch: pytest.MonkeyPatch) -> None:
    import solar.validate.executor as executor

    monkeypatch.setattr(executor, "CHUNK_POINTS", 7)
    text = _prog(
        "for i in 0 .. 4 { M[i] = -inf\n for j in 0 .. 4 { M[i] max= X[i, j] * 2.0\n"
        " T[j, i] = X[i, j] + 1.0 } }",
        "input X : f32[4, 4]\noutput M : f32[4]\noutput T : f32[4, 4]",
    )
    got = _run(text, X=X44)
    np.testing.assert_allclose(got["M"], X44.max(axis=1) * 2)
    np.testing.assert_allclose(got["T"], X44.T + 1)


def test_big_matmul_is_a_contraction_not_a_grid() -> None:
    # 256^3 = 16M points: a grid would need gigabytes; the contraction needs operands only.
    n = 256
    path = next(p for p in SAMPLES if p.stem == "matmul")
    program = parse_program(path.read_text(encoding="utf-8"))
    sizes = {"M": n, "N": n, "K": n}
    inputs = random_inputs(program, sizes, np.random.default_rng(0))
    got = execute_program(program, inputs, sizes=sizes, memory_budget_bytes=16 * 2**20)
    np.testing.assert_allclose(got["C"], inputs["A"] @ inputs["B"], rtol=1e-4, atol=1e-3)


def test_rank0_inputs_and_outputs() -> None:
    text = _prog(
        "Y[] = X[] * 2.0\nZ[] = bf16(X[])",
        "input X : f32[]\noutput Y : f32[]\noutput Z : bf16[]",
    )
    got = _run(text, X=np.array(1.5, dtype=np.float32))
    assert got["Y"].shape == ()
    assert float(got["Y"]) == 3.0
    assert float(got["Z"]) == 1.5


@pytest.mark.parametrize("shape", ["0", "0, 3", "3, 0"])
def test_zero_size_output_is_fully_written(shape: str) -> None:
    """An empty output has no element left to write (it was reported as not fully written)."""
    dims = [int(d) for d in shape.split(", ")]
    loops = " ".join(f"for i{k} in 0 .. {d} {{" for k, d in enumerate(dims))
    idx = ", ".join(f"i{k}" for k in range(len(dims)))
    text = (
        f"solar-ir 1\nprogram e\noutput y : f32[{shape}]\n"
        f"kernel k {{ {loops} y[{idx}] = 0.0 {'}' * len(dims)} }}"
    )
    out = execute_program(parse_program(text), {})
    assert out["y"].shape == tuple(dims)


@pytest.mark.parametrize(
    "body",
    [
        "for i in 0 .. 0 {\n    E[i] = X[i]\n  }",  # a loop over nothing
        "Y[0] = X[0]",  # no statement writes E at all
    ],
)
def test_empty_outputs_are_fully_written(body: str) -> None:
    """An output with a zero extent has nothing to write (transformers returns empty
    tensors, e.g. Reformer's unused buckets): it is complete, not E0306."""
    text = (
        "solar-ir 1\nprogram e\ninput X : f32[2]\noutput E : f32[0]\noutput Y : f32[1]\n"
        f"kernel k {{\n  {body}\n  Y[0] = X[1]\n}}\n"
    )
    out = execute_program(parse_program(text), {"X": np.array([1.0, 2.0], dtype=np.float32)})
    assert out["E"].shape == (0,)
    assert out["Y"].tolist() == [2.0]
