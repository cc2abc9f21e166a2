"""JAX reference data at reduced sizes: the shared search over module-level size constants."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from jax_check import run_lowered

from solar.diagnostics import FrontendError
from solar.frontends.jaxfe import reference_at_reduced_sizes, trace_jax_file
from solar.frontends.jaxfe.reference import program_bytes
from solar.pipeline import AnalyzeOptions, analyze

pytestmark = pytest.mark.jax

PROGRAM = """
    import jax
    import jax.numpy as jnp
    import numpy as np

    BATCH = 64
    SEQ = 32
    DIM = 16
    HEADS = 4


    def f(x, w):
        h = jnp.tanh(x @ w).reshape(BATCH, SEQ, HEADS, DIM // HEADS)
        return jax.nn.softmax(h, axis=-1).sum(axis=1)


    def get_inputs():
        rng = np.random.default_rng(0)
        return [
            rng.standard_normal((BATCH, SEQ, DIM), dtype=np.float32),
            rng.standard_normal((DIM, DIM), dtype=np.float32),
        ]
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "heads.py"
    path.write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    return path


def test_capture_records_the_size_constants(program: Path) -> None:
    capture = trace_jax_file(program, overrides={"SEQ": 8})
    assert capture.sizes == {"BATCH": 64, "SEQ": 8, "DIM": 16, "HEADS": 4}
    inputs = 64 * 8 * 16 * 4 + 16 * 16 * 4
    assert program_bytes(capture) > inputs


def test_reduced_sizes_fit_the_budget_and_validate(program: Path) -> None:
    red = reference_at_reduced_sizes(program, 64 * 1024)
    assert red.description.startswith("scaled BATCH 64->16, DIM 16->8, SEQ 32->8 (program ")
    assert "HEADS" not in red.description
    assert red.inputs["x0"].shape == (16, 8, 8)
    got = run_lowered(red.lowered, red.inputs)
    np.testing.assert_allclose(got["y0"], red.outputs["y0"], rtol=1e-5, atol=1e-6)


def test_full_size_when_it_fits(program: Path) -> None:
    red = reference_at_reduced_sizes(program, 1 << 30, start={"BATCH": 2})
    assert red.description.startswith("full size")
    assert red.inputs["x0"].shape == (2, 32, 16)


def test_pipeline_validates_at_reduced_sizes(program: Path) -> None:
    report = analyze(program, AnalyzeOptions(sizes={"BATCH": 128}, reference_budget_bytes=1 << 17))
    assert report.validation.status == "passed"
    assert report.validation.strategy == "reduced-sizes"
    assert report.validation.reason is not None
    assert report.validation.reason.startswith("scaled BATCH 128->")
    # the bounds are for the sizes asked: 2 * 128 * 32 * 16 * 16 FLOPs in the matmul alone
    assert report.flops >= 2 * 128 * 32 * 16 * 16


def test_pipeline_validates_at_full_size_under_the_default_budget(program: Path) -> None:
    report = analyze(program, AnalyzeOptions())
    assert report.validation.status == "passed"
    assert report.validation.strategy == "full"
    assert report.validation.reason is None


def test_no_reduction_fits(program: Path) -> None:
    with pytest.raises(FrontendError) as info:
        analyze(program, AnalyzeOptions(reference_budget_bytes=16, validate="full"))
    assert info.value.code == "E0511"
    assert "heads.py" in info.value.message
    assert any("BATCH, SEQ, DIM" in n for n in info.value.notes)


def test_no_reduction_fits_is_skipped_under_auto(program: Path) -> None:
    """Validation never blocks analysis: the default reports why it was skipped."""
    report = analyze(program, AnalyzeOptions(reference_budget_bytes=16))
    v = report.validation
    assert v.status == "skipped"
    assert v.reason is not None and v.reason.startswith("no reference run: error[E0511]")
    assert "BATCH, SEQ, DIM" in v.reason
