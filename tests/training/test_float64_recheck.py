"""Validation's float64 re-check (Note [Float64 re-check] in solar/pipeline/validation.py).

A deep, narrow CNN with a training-mode batch norm after every convolution, at batch 2
on 3x3 maps (each norm over 18 values), is ill-conditioned enough that its step's fp32
gradients differ between numpy's and torch's summation orders beyond the fp32
tolerance (30 layers: about 50 of its outputs, up to 9 times the tolerance); the same IR
widened to f64 matches the model run in float64. A wrong IR fails both checks.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import textwrap
from pathlib import Path

import numpy as np
import pytest

from solar.frontends import ValidationPlan
from solar.ir import (
    Assign,
    Binary,
    FloatLit,
    For,
    If,
    Kernel,
    Stmt,
    parse_program,
    print_program,
    walk_stmts,
)
from solar.pipeline import AnalyzeOptions, analyze, analyze_module
from solar.pipeline.validation import _recheck_in_float64
from solar.report import OutputCheck, Report, ValidationInfo, render_text

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

DEEP_BN_CNN = textwrap.dedent(
    """
    import torch
    from torch import nn

    DEPTH = 30


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            layers = [nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU()]
            for _ in range(DEPTH):
                layers += [nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4),
                           nn.ReLU()]
            layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3)]
            self.net = nn.Sequential(*layers)

        def forward(self, x):
            return self.net(x)


    def get_inputs():
        return [torch.randn(2, 3, 3, 3)]


    def get_init_inputs():
        return []
    """
)


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("deep_bn") / "deep_bn_cnn.py"
    path.write_text(DEEP_BN_CNN)
    return path


def _analyze(path: Path, **kw: object) -> Report:
    options = AnalyzeOptions(train_step=True, optimizer="sgd", validate="full", **kw)  # type: ignore[arg-type]
    return analyze(path, options)


@pytest.fixture(scope="module")
def report(model_file: Path) -> Report:
    return _analyze(model_file)


def test_a_deep_bn_step_fails_fp32_and_passes_the_float64_recheck(report: Report) -> None:
    v = report.validation
    assert v.status == "passed"
    assert v.dtype == "float64"
    assert v.strategy == "full"
    assert v.sizes["DEPTH"] == 30
    # the float64 check's tolerances are float64 ones (base rtol 1e-9 times sqrt(L))
    assert all(o.rtol < 1e-6 for o in v.outputs)
    assert all(o.passed for o in v.outputs)
    fp32 = v.fp32_check
    assert fp32 is not None
    assert fp32.failed_outputs, "the fp32 comparison must have failed for this model"
    assert all(not o.passed and o.rtol > 1e-6 for o in fp32.failed_outputs)
    assert fp32.max_abs_error is not None and fp32.max_abs_error > 0
    assert "conditioning" in fp32.not_accepted
    assert v.reason is not None and v.reason.startswith("checked in float64")
    assert "validation: PASSED (full, in float64: the fp32 check failed" in render_text(report)


def test_a_reduced_batch_plan_is_rechecked_at_its_own_batch(model_file: Path) -> None:
    spec = importlib.util.spec_from_file_location("deep_bn_cnn", model_file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    # batch 4 takes about 160 KiB: a 150 KiB budget cuts it to 3, in fp32 and in float64
    options = AnalyzeOptions(
        train_step=True, optimizer="sgd", reference_budget_bytes=150 * 1024
    )
    v = analyze_module(mod.Model(), (torch.randn(4, 3, 3, 3),), options).validation
    assert v.strategy == "reduced-batch"
    assert v.status == "passed"
    assert v.dtype == "float64"
    assert v.fp32_check is not None and v.fp32_check.failed_outputs
    assert "cut the inputs' batch 4->" in (v.reason or "")


@pytest.fixture(scope="module")
def shallow_ir(model_file: Path) -> Path:
    """The IR of a 2-layer step, which validates in fp32 (saved by the analysis)."""
    ir = model_file.parent / "shallow.alir"
    v = _analyze(model_file, sizes={"DEPTH": 2}, save_ir=ir).validation
    assert v.status == "passed"
    assert v.dtype == "as-captured"  # a passing fp32 check is not re-checked
    assert v.fp32_check is None
    return ir


def _scaled_last_assign(kernel: Kernel, factor: float) -> Kernel:
    last = [s for s, _ in walk_stmts(kernel.body) if isinstance(s, Assign)][-1]

    def scale(stmt: Stmt) -> Stmt:
        if stmt is last:
            return dataclasses.replace(last, value=Binary("*", last.value, FloatLit(factor)))
        if isinstance(stmt, For | If):
            return dataclasses.replace(stmt, body=tuple(scale(s) for s in stmt.body))
        return stmt

    return dataclasses.replace(kernel, body=tuple(scale(s) for s in kernel.body))


def test_a_wrong_ir_fails_in_fp32_and_in_float64(model_file: Path, shallow_ir: Path) -> None:
    # a wrong lowering: each backward batch norm's results scaled by 1.01 (a
    # biased/unbiased variance mix-up over 18 values would be 6%)
    program = parse_program(shallow_ir.read_text())
    kernels = [
        _scaled_last_assign(k, 1.01) if "batch_norm_backward" in k.name else k
        for k in program.kernels
    ]
    assert kernels != list(program.kernels)
    wrong = model_file.parent / "wrong.alir"
    wrong.write_text(print_program(dataclasses.replace(program, kernels=tuple(kernels))))
    v = _analyze(model_file, sizes={"DEPTH": 2}, ir_file=wrong).validation
    assert v.status == "failed"
    assert v.dtype == "float64"
    assert any(not o.passed for o in v.outputs)
    assert v.fp32_check is not None
    assert v.fp32_check.failed_outputs
    assert "fails too" in v.fp32_check.not_accepted


@pytest.mark.parametrize(
    ("dtype", "error", "rechecked"),
    [("f32", 1e-3, True), ("bf16", 1e-3, False), ("f32", None, False)],
    ids=["f32", "bf16", "f32-not-finite"],
)
def test_only_rounding_like_mismatches_of_wide_programs_are_rechecked(
    dtype: str, error: float | None, rechecked: bool
) -> None:
    # a bf16 program rounds on purpose: widening it would change what it computes; an
    # fp32 overflow (a mismatch that is not finite) is no rounding error
    program = parse_program(
        "solar-ir 1\nprogram p\n"
        f"input x : {dtype}[2]\noutput y : {dtype}[2]\n"
        "kernel k {\n  for i in 0 .. 2 {\n    y[i] = x[i] * 2.0\n  }\n}\n"
    )
    x = np.array([1.0, 2.0])
    calls: list[int] = []

    def float64() -> ValidationPlan:
        calls.append(1)
        return ValidationPlan(program, {"x": x}, {"y": 2.0 * x})

    plan = ValidationPlan(program, {"x": x}, {"y": x}, float64=float64)
    failed = OutputCheck(
        name="y", passed=False, max_abs_error=error, max_rel_error=error, rtol=1e-5, atol=1e-6
    )
    fp32 = ValidationInfo(
        status="failed", strategy="full", sizes={}, fraction_checked=1.0, reason="differs",
        outputs=(failed,),
    )
    v = _recheck_in_float64(plan, fp32, "auto", AnalyzeOptions(), lambda _: None)
    assert bool(calls) is rechecked
    assert v.dtype == ("float64" if rechecked else "as-captured")
    assert v.status == ("passed" if rechecked else "failed")
