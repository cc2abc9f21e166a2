"""Two-thread execution and cache blocking give the same results as serial execution."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sample_sizes import small_ir_text

from solar.ir import parse_program
from solar.validate import execute_program, grids, parallel
from solar.validate import executor as executor_module

from .references import make_inputs

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples" / "ir").glob("*.alir"))


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split every statement, block and scan, however small."""
    monkeypatch.setattr(parallel, "WORKERS", 2)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_POINTS", 1)
    monkeypatch.setattr(grids, "BLOCK_POINTS", 7)
    monkeypatch.setattr(executor_module, "CHUNK_POINTS", 50)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_parallel_equals_serial(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = parse_program(small_ir_text(path))
    inputs = make_inputs(path.stem, program, np.random.default_rng(3))
    serial = execute_program(program, inputs)
    monkeypatch.setattr(parallel, "WORKERS", 2)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_POINTS", 1)
    monkeypatch.setattr(grids, "BLOCK_POINTS", 7)
    split = execute_program(program, inputs)
    for name, value in serial.items():
        np.testing.assert_allclose(split[name], value, rtol=1e-6, atol=1e-6, err_msg=name)


def test_fault_in_second_half_is_reported(tiny_pieces: None) -> None:
    from solar.diagnostics import ExecutionError

    text = (
        "solar-ir 1\nprogram p\ninput X : f32[64]\noutput Y : f32[64]\nkernel k {\n"
        "  for i in 0 .. 64 {\n    Y[i] = X[i + i // 63]\n  }\n}\n"
    )
    with pytest.raises(ExecutionError) as info:
        execute_program(parse_program(text), {"X": np.zeros(64, np.float32)})
    assert info.value.code == "E0301"
    assert "at i=63" in info.value.message


def test_run_all_reraises_first_failure_in_order() -> None:
    def ok() -> None:
        return None

    def bad(msg: str) -> None:
        raise ValueError(msg)

    with pytest.raises(ValueError, match="first"):
        parallel.run_all([ok, lambda: bad("first"), lambda: bad("second")])


def test_blas_runs_one_thread_per_piece_and_is_restored() -> None:
    # Note [One BLAS thread per piece]: concurrent pieces that call BLAS must not each
    # ask OpenBLAS for every core
    blas = parallel._openblas()
    if blas is None:
        pytest.skip("numpy is not linked to OpenBLAS here")
    _, get_threads = blas
    before = get_threads()
    seen: list[int] = []
    parallel.run_all([lambda: seen.append(get_threads()), lambda: seen.append(get_threads())])
    with parallel.one_blas_thread():
        seen.append(get_threads())
    assert seen == [1, 1, 1]
    assert get_threads() == before
