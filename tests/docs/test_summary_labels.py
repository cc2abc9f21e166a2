"""The summary read as a newcomer reads it (issue 31, round three): every number says
what it is, and no line contradicts another. Each case runs `solar analyze` on a bundled
sample as a user would and checks the lines a first reading tripped over."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow


def _analyze(*args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    done = subprocess.run(
        [sys.executable, "-m", "solar", "analyze", *args, "-q"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=900, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.torch
def test_a_training_step_names_what_its_parameter_count_holds() -> None:
    pytest.importorskip("torch")
    out = _analyze("samples/torch/train_cnn.py", "--train", "--validate", "off")
    # 26.1 k elements: the model's 13 k parameters and SGD's momentum buffer, as many
    assert ("parameters: 26.1 k elements, 104 kB (parameters, buffers and the optimizer's "
            "state: the model's own are 52.1 kB)") in out
    assert "memory: parameters 52.1 kB, optimizer state 52.1 kB" in out
    # the backward convolutions' taps over padding are no work for either count
    assert "FLOP SHORTFALL" not in out
    assert "(ok)" in out.split("FLOPs check vs FlopCounterMode")[1].splitlines()[0]


@pytest.mark.torch
def test_an_elementwise_program_gets_no_matmul_hint_nor_zero_times() -> None:
    pytest.importorskip("torch")
    out = _analyze("samples/torch/elementwise_mix.py", "--validate", "off")
    assert "matmuls and convolutions (0% of the unfused bound)" not in out
    assert "  hint: cast to bf16: fp32 tensors at 2 bytes (the program has no fp32 matmul" in out
    rows = [line for line in out.splitlines() if "%" in line and " ns " in line]
    assert rows
    assert not [r for r in rows if " 0.0 ns " in r], rows  # a share of a bound is never 0.0 ns


@pytest.mark.jax
def test_a_jax_program_says_why_its_policy_is_tf32() -> None:
    pytest.importorskip("jax")
    out = _analyze("samples/jax/flax_mlp.py", "--validate", "off")
    assert "— precision policy tf32" in out
    assert "  precision: JAX runs fp32 matmuls at DEFAULT precision (TF32 on GPUs" in out
    # XLA's own count beside SOLAR's, as FlopCounterMode's is for PyTorch
    assert "  FLOPs check vs XLA cost_analysis: SOLAR 12.9 GFLOP, XLA " in out


@pytest.mark.torch
def test_a_pipelined_plan_names_one_binding_stage_and_says_what_the_estimate_is() -> None:
    pytest.importorskip("torch")
    out = _analyze(
        "benchmarks/distributed/gpt.py", "--train", "--validate", "off", "--set", "LAYERS=8",
        "--set", "HIDDEN=4096", "--set", "HEADS=32", "--set", "SEQ=2048", "--set", "VOCAB=1024",
        "--cluster", "DGX_H100", "--parallel", "tp=8,pp=4,dp=1", "--global-batch", "16",
    )  # fmt: skip
    step = next(line for line in out.splitlines() if line.startswith("  step >= "))
    # "binds: pipeline work (bidirectional, stage 1), stage 0" named two stages
    assert "binds: pipeline work (bidirectional, stage " in step
    assert step.count("stage") == 1, step
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "estimate (not a bound)" in line)
    estimate = float(lines[at].split("per-hop latency: ")[1].split()[0])
    bound = float(step.split("step >= ")[1].split()[0])
    assert estimate < bound  # a per-rank figure below the bound: the next line says why
    assert lines[at + 1] == ("    (both of the busiest rank's resources alone: the step bound "
                             "also holds the pipeline's order)")
    assert len(lines[at + 1]) <= 100
