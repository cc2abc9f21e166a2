"""`validate`: statuses, strategies, tolerance policy and comparison messages."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from solar.diagnostics import FrontendError
from solar.ir import DType, parse_program
from solar.validate import (
    Tolerance,
    compare_outputs,
    estimate_memory_bytes,
    estimate_workload,
    output_tolerances,
    random_inputs,
    tolerance_for,
    validate,
)

MATMUL = """solar-ir 1
program matmul
size M = 64
size N = 48
size K = 32
input A : f32[M, K]
input B : f32[K, N]
output C : f32[M, N]
kernel matmul {
  for i in 0 .. M {
    for j in 0 .. N {
      C[i, j] = 0.0
      for k in 0 .. K {
        C[i, j] += A[i, k] * B[k, j]
      }
    }
  }
}
"""

SOFTMAX_TWO_KERNELS = """solar-ir 1
program sm
size B = 16
size N = 32
input X : f32[B, N]
temp E : f32[B, N]
output Y : f32[B, N]
kernel e {
  for b in 0 .. B {
    for n in 0 .. N {
      E[b, n] = exp(X[b, n])
    }
  }
}
kernel norm {
  local s : f32[B]
  for b in 0 .. B {
    s[b] = 0.0
    for n in 0 .. N {
      s[b] += E[b, n]
    }
    for n in 0 .. N {
      Y[b, n] = E[b, n] / s[b]
    }
  }
}
"""


def _matmul_reference(
    sizes: Mapping[str, int],
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(sum(sizes.values()))
    a = rng.standard_normal((sizes["M"], sizes["K"])).astype(np.float32)
    b = rng.standard_normal((sizes["K"], sizes["N"])).astype(np.float32)
    return {"A": a, "B": b}, {"C": a.astype(np.float64) @ b}


@pytest.fixture
def matmul():  # type: ignore[no-untyped-def]
    return parse_program(MATMUL)


def frozen_clock() -> float:
    """A clock that never moves: the time budget plans the run, but the run is never cut
    short, whatever the machine's load (no test may depend on wall-clock time)."""
    return 0.0


def test_full_validation_passes(matmul) -> None:  # type: ignore[no-untyped-def]
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    result = validate(matmul, inputs, outputs)
    assert result.status == "passed"
    assert result.passed
    assert result.strategy == "full"
    assert result.checked_fraction == 1.0
    assert result.sizes["M"] == 64
    assert result.max_abs_error["C"] < 1e-4
    assert result.tolerances["C"].rtol == pytest.approx(1e-5 * np.sqrt(32))
    assert result.mismatch == ""
    assert result.reason == ""
    assert result.wall_time_s > 0


def test_mismatch_is_described_for_repair(matmul) -> None:  # type: ignore[no-untyped-def]
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    wrong = dict(outputs)
    wrong["C"] = outputs["C"].copy()
    wrong["C"][3, 17] += 5.0
    result = validate(matmul, inputs, wrong)
    assert result.status == "failed"
    assert not result.passed
    assert "output `C`" in result.mismatch
    assert "1 of 3072 checked elements differ" in result.mismatch
    assert "worst at index [3, 17]" in result.mismatch
    assert result.outputs[0].mismatches == 1


def test_execution_fault_is_an_error_with_diagnostic() -> None:
    program = parse_program(MATMUL.replace("B[k, j]", "B[k + 1, j]"), filename="mm.alir")
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    result = validate(program, inputs, outputs)
    assert result.status == "error"
    assert result.error is not None
    assert result.error.code == "E0301"
    assert "mm.alir:14:9" in result.reason


def test_without_reference_data_it_skips(matmul) -> None:  # type: ignore[no-untyped-def]
    result = validate(matmul)
    assert result.status == "skipped"
    assert not result.passed
    assert "no reference" in result.reason


def test_over_budget_without_callback_or_sampling_skips() -> None:
    program = parse_program(SOFTMAX_TWO_KERNELS)
    inputs = random_inputs(program, None, np.random.default_rng(0))
    x = inputs["X"].astype(np.float64)
    expected = {"Y": np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)}
    result = validate(program, inputs, expected, time_budget_s=1e-9)
    assert result.status == "skipped"
    assert "no reference_at(sizes) callback" in result.reason
    assert "one kernel" in result.reason


def test_reduced_sizes_with_callback(matmul) -> None:  # type: ignore[no-untyped-def]
    big = {"M": 4096, "N": 4096, "K": 4096}
    calls: list[dict[str, int]] = []

    def reference_at(sizes: Mapping[str, int]):  # type: ignore[no-untyped-def]
        calls.append(dict(sizes))
        return _matmul_reference(sizes)

    result = validate(
        matmul, sizes=big, reference_at=reference_at, time_budget_s=2.0, clock=frozen_clock
    )
    assert result.status == "passed", result.reason
    assert result.strategy == "reduced-sizes"
    assert len(calls) == 1
    assert all(8 <= calls[0][k] < 4096 for k in big)
    assert result.sizes["M"] == calls[0]["M"]


def test_reduced_sizes_callback_failure_is_reported(matmul) -> None:  # type: ignore[no-untyped-def]
    def reference_at(sizes: Mapping[str, int]):  # type: ignore[no-untyped-def]
        raise FrontendError("cannot build the model at these sizes")

    result = validate(
        matmul,
        sizes={"M": 4096, "N": 4096, "K": 4096},
        reference_at=reference_at,
        time_budget_s=0.05,
    )
    assert result.status == "skipped"
    assert "cannot build the model" in result.reason


def test_reduced_sizes_keep_small_sizes_and_say_what_was_scaled() -> None:
    program = parse_program(MATMUL.replace("size K = 32", "size K = 3"))
    calls: list[dict[str, int]] = []

    def reference_at(sizes: Mapping[str, int]):  # type: ignore[no-untyped-def]
        calls.append(dict(sizes))
        inputs = random_inputs(program, sizes, np.random.default_rng(0))
        return inputs, {"C": inputs["A"] @ inputs["B"]}

    result = validate(
        program,
        sizes={"M": 10**4, "N": 10**4},
        reference_at=reference_at,
        time_budget_s=0.5,
        clock=frozen_clock,
    )
    assert result.status == "passed", result.reason
    assert result.strategy == "reduced-sizes"
    assert calls[0]["K"] == 3
    assert calls[0]["M"] == calls[0]["N"] < 10**4
    assert result.description.startswith(f"scaled M 10000->{calls[0]['M']}, N 10000->")


def test_sampled_strategy(matmul) -> None:  # type: ignore[no-untyped-def]
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    result = validate(matmul, inputs, outputs, strategy="sampled", sample_fraction=0.25)
    assert result.status == "passed"
    assert result.strategy == "sampled"
    assert result.checked_fraction == pytest.approx(16 / 64)
    assert result.outputs[0].checked == 16 * 48


def test_sampled_strategy_still_finds_mismatches(matmul) -> None:  # type: ignore[no-untyped-def]
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    wrong = {"C": outputs["C"] + 1.0}
    result = validate(matmul, inputs, wrong, strategy="sampled", sample_fraction=0.1)
    assert result.status == "failed"
    assert result.checked_fraction < 0.2


def test_auto_falls_back_to_sampling_when_over_budget(matmul) -> None:  # type: ignore[no-untyped-def]
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    result = validate(matmul, inputs, outputs, time_budget_s=1e-6, clock=frozen_clock)
    assert result.strategy == "sampled"
    assert result.status == "passed", result.reason
    assert 0 < result.checked_fraction < 1


def test_sampling_not_possible_with_temps() -> None:
    program = parse_program(SOFTMAX_TWO_KERNELS)
    inputs = random_inputs(program, None, np.random.default_rng(0))
    result = validate(program, inputs, {"Y": np.zeros((16, 32))}, strategy="sampled")
    assert result.status == "skipped"


def test_missing_output_fails(matmul) -> None:  # type: ignore[no-untyped-def]
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    result = validate(matmul, inputs, {**outputs, "D": np.zeros(3)})
    assert result.status == "failed"
    assert "output `D` was not produced" in result.mismatch


def test_explicit_tolerance_overrides_policy(matmul) -> None:  # type: ignore[no-untyped-def]
    inputs, outputs = _matmul_reference({"M": 64, "N": 48, "K": 32})
    loose = validate(matmul, inputs, {"C": outputs["C"] * 1.01}, tolerance=Tolerance(0.02, 0))
    assert loose.status == "passed"
    tight = validate(matmul, inputs, {"C": outputs["C"] * 1.01})
    assert tight.status == "failed"


def test_compare_checks_shape_nan_and_inf() -> None:
    tol = Tolerance(1e-6, 0.0)
    exp = {"a": np.array([1.0, np.nan, np.inf]), "b": np.zeros(3), "c": np.array([np.inf])}
    got = {"a": np.array([1.0, np.nan, np.inf]), "b": np.zeros(4), "c": np.array([-np.inf])}
    res = {c.name: c for c in compare_outputs(exp, got, tol)}
    assert res["a"].ok
    assert res["b"].status == "shape"
    assert res["c"].status == "mismatch"


def test_tolerance_policy_by_dtype_and_reduction() -> None:
    assert tolerance_for(DType.F32, 1).rtol < tolerance_for(DType.F32, 4096).rtol
    assert tolerance_for(DType.F16).rtol > tolerance_for(DType.F32).rtol
    assert tolerance_for(DType.BF16).rtol > tolerance_for(DType.F16).rtol
    assert tolerance_for(DType.F8E5M2).rtol >= tolerance_for(DType.F8E4M3).rtol
    assert tolerance_for(DType.I64) == Tolerance(0.0, 0.0)
    assert tolerance_for(DType.F32, 10**12).rtol == 0.5


def test_output_tolerances_follow_dependencies() -> None:
    program = parse_program(SOFTMAX_TWO_KERNELS.replace("temp E : f32", "temp E : bf16"))
    from solar.ir import resolve_sizes

    tol = output_tolerances(program, resolve_sizes(program))
    # Y is f32 but computed from a bf16 temp and a 32-term sum
    assert tol["Y"] == tolerance_for(DType.BF16, 32)


def test_memory_and_work_estimates(matmul) -> None:  # type: ignore[no-untyped-def]
    small = estimate_memory_bytes(matmul, {"M": 64, "N": 64, "K": 64})
    big = estimate_memory_bytes(matmul, {"M": 1024, "N": 1024, "K": 1024})
    # three 1024^2 f32 tensors + masks/copies; never the 1024^3 grid
    assert 12 * 2**20 < big < 64 * 2**20
    assert small < big
    work = estimate_workload(matmul, {"M": 1024, "N": 1024, "K": 1024})
    assert work.points >= 1024**3
    assert work.seconds < 5
